import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { newRootUid, queryRows, schema, type Database, type DatabaseHandle } from "../db/index.js";
import { EventRetention } from "./retention.js";

// Retention (PLATFORM_EVENT_RETENTION): old events go, with their finished deliveries; an event
// still pending delivery stays.

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
const NOW = new Date("2030-06-01T00:00:00.000Z");
const DAY = 86_400_000;

async function event(uid: string, ageDays: number): Promise<number> {
  const [row] = await handle.db
    .insert(schema.events)
    .values({
      uid,
      type: "platform.iam.group.created.v1",
      source: "https://test",
      subject: "s",
      parentUid: null,
      time: new Date(NOW.getTime() - ageDays * DAY),
      data: {},
    })
    .returning({ seq: schema.events.seq });
  return row!.seq;
}

describe("EventRetention", () => {
  it("deletes events older than the retention and their finished deliveries; keeps newer ones and those still pending", async () => {
    const group = newRootUid();
    await handle.db.insert(schema.groups).values({ uid: group, parentUid: null, name: "g", createTime: NOW, updateTime: NOW });
    await handle.db.insert(schema.subscriptions).values({
      uid: `${group}/0000000000000001`,
      parentUid: group,
      sink: "https://example.com",
      secret: "x",
      createTime: NOW,
      updateTime: NOW,
    });
    const delivery = (eventUid: string, seq: number, state: string) =>
      handle.db.insert(schema.eventDeliveries).values({
        subscriptionUid: `${group}/0000000000000001`,
        eventUid,
        eventSeq: seq,
        subject: "s",
        state,
        nextAttemptTime: NOW,
        deadline: NOW,
      });
    await delivery("old-delivered", await event("old-delivered", 100), "delivered");
    await delivery("old-pending", await event("old-pending", 100), "pending");
    await event("old-plain", 91);
    await event("recent", 89);
    const retention = new EventRetention({
      db: handle.db,
      clock: () => NOW,
      retentionMs: 90 * DAY,
      onError: (e) => {
        throw e;
      },
    });
    expect(await retention.prune()).toBe(2);
    const left = await handle.db.select({ uid: schema.events.uid }).from(schema.events).orderBy(schema.events.uid);
    expect(left.map((r) => r.uid)).toEqual(["old-pending", "recent"]);
    expect(await handle.db.select().from(schema.eventDeliveries).where(eq(schema.eventDeliveries.eventUid, "old-delivered"))).toEqual([]);
    expect(await queryRows(handle.db, sql`select 1 from event_deliveries where event_uid = 'old-pending'`)).toHaveLength(1);
    // Idempotent: another replica pruning at the same time finds nothing more.
    expect(await retention.prune()).toBe(0);
  });

  it("stop() ends a run under way after its current batch and waits for it: nothing queries once the server closes its database", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let statements = 0;
    // Every batch comes back full, so only stop() ends the run.
    const db = { execute: async () => (statements++, await gate, [{ n: 5_000 }]) } as unknown as Database;
    const retention = new EventRetention({
      db,
      clock: () => NOW,
      retentionMs: DAY,
      onError: (e) => {
        throw e;
      },
    });
    retention.start();
    expect(statements).toBe(1);
    let stopped = false;
    const stopping = retention.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(statements).toBe(1);
  });
});
