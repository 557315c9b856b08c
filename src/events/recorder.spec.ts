import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { testEventRecorder } from "../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { newRootUid, queryRows, schema, type DatabaseHandle } from "../db/index.js";
import { newEventUid } from "./recorder.js";

// The recorder writes an event and one delivery per matching subscription in the change's
// transaction; a subscription deleted at the same moment must neither fail the change nor get one.

const NOW = new Date("2030-06-01T00:00:00.000Z");
let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
const recorder = testEventRecorder(() => NOW);

async function groupWithSubscriptions(): Promise<{ group: string; doomed: string; kept: string }> {
  const group = newRootUid();
  await handle.db.insert(schema.groups).values({ uid: group, parentUid: null, name: "g", createTime: NOW, updateTime: NOW });
  const [doomed, kept] = [`${group}/00000000000000d1`, `${group}/00000000000000k1`];
  for (const uid of [doomed, kept]) {
    await handle.db
      .insert(schema.subscriptions)
      .values({ uid, parentUid: group, sink: "https://example.com", secret: "x", createTime: NOW, updateTime: NOW });
  }
  return { group, doomed, kept };
}

const deliveriesOf = (subject: string) =>
  queryRows<{ subscription_uid: string }>(
    handle.db,
    sql`select subscription_uid from event_deliveries where subject = ${subject} order by subscription_uid`,
  );

const event = (group: string, subject: string) => ({ type: "platform.registry.repo.created.v1", subject, actor: "a", group, data: {} });

describe("EventRecorder and a subscription deleted at the same time", () => {
  it("records the event for the subscriptions that remain; the one deleted gets no delivery and fails nothing", async () => {
    const { group, doomed, kept } = await groupWithSubscriptions();
    const subject = `${group}/repo`;
    if (handle.kind === "pglite") {
      // One connection: the delete and the write cannot overlap, only follow each other.
      await handle.db.delete(schema.subscriptions).where(eq(schema.subscriptions.uid, doomed));
      await recorder.record(handle.db, event(group, subject));
    } else {
      // The delete holds its row lock, uncommitted, while the event's statement starts and
      // waits on it; then the delete commits.
      let commit!: () => void;
      const committed = new Promise<void>((resolve) => (commit = resolve));
      let deleted!: () => void;
      const deleting = new Promise<void>((resolve) => (deleted = resolve));
      const deletion = handle.db.transaction(async (tx) => {
        await tx.delete(schema.subscriptions).where(eq(schema.subscriptions.uid, doomed));
        deleted();
        await committed;
      });
      await deleting;
      const recording = recorder.record(handle.db, event(group, subject));
      let waiting = false;
      for (let i = 0; i < 500 && !waiting; i++) {
        const [row] = await queryRows<{ n: number }>(
          handle.db,
          sql`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
        );
        waiting = row!.n > 0;
        if (!waiting) await new Promise((r) => setTimeout(r, 10));
      }
      // The event's statement really waited on the delete: otherwise this tested no race.
      expect(waiting).toBe(true);
      commit();
      await deletion;
      await recording;
    }
    expect((await deliveriesOf(subject)).map((r) => r.subscription_uid)).toEqual([kept]);
    expect(await queryRows(handle.db, sql`select 1 from events where subject = ${subject}`)).toHaveLength(1);
  });
});

describe("newEventUid", () => {
  it("is 28 hex characters, the milliseconds first, and sorts in the order the ids were made", () => {
    const t = new Date("2031-01-01T00:00:00.000Z");
    // Same millisecond (one change's events), then a later one, then a clock that stepped back.
    const times = [t, t, t, new Date(t.getTime() + 1), new Date(t.getTime() + 1), new Date(t.getTime() - 5_000), t];
    const ids = times.map((time) => newEventUid(time));
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{28}$/);
    expect(ids[0]!.slice(0, 12)).toBe(t.getTime().toString(16).padStart(12, "0"));
    expect(ids[3]!.slice(0, 12)).toBe((t.getTime() + 1).toString(16).padStart(12, "0"));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
