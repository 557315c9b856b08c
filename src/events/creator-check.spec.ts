import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { Grants } from "../authz/grants.js";
import { newRootUid, schema, type DatabaseHandle } from "../db/index.js";
import { CreatorCheck } from "./creator-check.js";
import { CREATOR_DELETED, creatorMayNotList } from "./stop-subscriptions.js";

// The sweep that stops subscriptions whose creators lost events.list (docs/design.md, "Webhooks").

const NOW = new Date("2030-06-01T00:00:00.000Z");
let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

class CountingCheck extends CreatorCheck {
  sweeps = 0;
  override async sweep(): Promise<string[]> {
    this.sweeps++;
    return super.sweep();
  }
}

describe("CreatorCheck", () => {
  it("stops the subscriptions whose creator lost events.list there or was deleted, leaves the others, and sweeps twice for a burst of twenty changes (one, then one for all that came during it)", async () => {
    const org = newRootUid();
    const team = `${org}/${randomBytes(8).toString("hex")}`;
    for (const [uid, parentUid] of [
      [org, null],
      [team, org],
    ] as const) {
      await handle.db.insert(schema.groups).values({ uid, parentUid, name: "g", createTime: NOW, updateTime: NOW });
    }
    const held = new Map<string, Grants>([
      // At the organization: covers the team below it.
      ["admin", new Grants([{ groupUid: null, capabilities: new Set(["events.list"]) }])],
      ["carol", new Grants([{ groupUid: org, capabilities: new Set(["subscriptions.list"]) }])],
      ["owner", new Grants([{ groupUid: org, capabilities: new Set(["events.list"]) }])],
    ]);
    const subscriptions: Record<string, string> = {};
    for (const creator of ["admin", "carol", "owner", "gone", null]) {
      const uid = `${team}/${randomBytes(8).toString("hex")}`;
      subscriptions[creator ?? "none"] = uid;
      await handle.db
        .insert(schema.subscriptions)
        .values({ uid, parentUid: team, sink: "https://example.com/", secret: "s", creatorUid: creator, createTime: NOW, updateTime: NOW });
    }
    const check = new CountingCheck({
      db: handle.db,
      grantsOf: (uid) => Promise.resolve(held.get(uid) ?? new Grants([], { exists: false, rootLevel: false, issuer: "" })),
      clock: () => NOW,
      minGapMs: 100,
      onError: (e) => {
        throw e;
      },
    });
    for (let i = 0; i < 20; i++) check.changed();
    for (let i = 0; i < 200 && check.sweeps < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300));
    await check.close();
    expect(check.sweeps).toBe(2);

    const rows = await handle.db.select().from(schema.subscriptions);
    const state = (who: string) => rows.find((r) => r.uid === subscriptions[who]);
    expect(state("carol")).toMatchObject({ state: "stopped", lastError: creatorMayNotList("carol", team), lastErrorTime: NOW });
    expect(state("gone")).toMatchObject({ state: "stopped", lastError: CREATOR_DELETED });
    for (const kept of ["admin", "owner", "none"]) expect(state(kept), kept).toMatchObject({ state: "active", lastError: "" });
  });
});
