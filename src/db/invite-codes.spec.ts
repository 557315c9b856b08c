import { createHash } from "node:crypto";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { newChildUid, newRootUid, schema, type DatabaseHandle } from "./index.js";
import { findRedeemableInvite, markInviteRedeemed } from "./invite-codes.js";

// The redemption store the login flow uses, against a real database
// (a copy of the migrated PGlite, or a fresh PostgreSQL database when DATABASE_URL is set).

const T0 = new Date("2030-01-01T00:00:00.000Z");
const HOUR = 3600_000;

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
let groupUid: string;

beforeAll(async () => {
  groupUid = newRootUid();
  await handle.db.insert(schema.groups).values({ uid: groupUid, name: "org", createTime: T0, updateTime: T0 });
});

let n = 0;
/** Stores an invite for a new code, created at T0 and valid for an hour. */
async function storeInvite(singleUse: boolean): Promise<{ uid: string; code: string }> {
  const code = `code-${++n}-${singleUse}`;
  const uid = newChildUid(groupUid);
  await handle.db.insert(schema.groupInvites).values({
    uid,
    parentUid: groupUid,
    roleUid: "viewer",
    singleUse,
    codeHash: createHash("sha256").update(code).digest("hex"),
    expirationTime: new Date(T0.getTime() + HOUR),
    createTime: T0,
    updateTime: T0,
  });
  return { uid, code };
}

async function row(uid: string) {
  const [r] = await handle.db.select().from(schema.groupInvites).where(eq(schema.groupInvites.uid, uid));
  return r!;
}

const at = (ms: number) => new Date(T0.getTime() + ms);

describe("findRedeemableInvite", () => {
  it("finds a live invite by its code, and nothing for another code", async () => {
    const { uid, code } = await storeInvite(false);
    expect((await findRedeemableInvite(handle.db, code, at(1000)))?.uid).toBe(uid);
    expect(await findRedeemableInvite(handle.db, `${code}x`, at(1000))).toBeUndefined();
  });

  it("finds nothing once the invite has expired", async () => {
    const { code } = await storeInvite(false);
    expect(await findRedeemableInvite(handle.db, code, at(HOUR - 1))).toBeDefined();
    expect(await findRedeemableInvite(handle.db, code, at(HOUR))).toBeUndefined();
  });
});

describe("markInviteRedeemed", () => {
  it("uses a single-use invite up: once true, then false, and it is no longer found", async () => {
    const { uid, code } = await storeInvite(true);
    expect(await markInviteRedeemed(handle.db, uid, at(5000))).toBe(true);
    expect(await markInviteRedeemed(handle.db, uid, at(6000))).toBe(false);
    expect(await findRedeemableInvite(handle.db, code, at(7000))).toBeUndefined();
    const r = await row(uid);
    expect(r.redeemTime?.getTime()).toBe(at(5000).getTime());
    expect(r.updateTime.getTime()).toBe(at(5000).getTime());
  });

  it("lets exactly one of two concurrent redemptions of a single-use invite win", async () => {
    const { uid } = await storeInvite(true);
    const results = await Promise.all([markInviteRedeemed(handle.db, uid, at(1000)), markInviteRedeemed(handle.db, uid, at(1000))]);
    expect(results.filter(Boolean)).toHaveLength(1);
  });

  it("keeps a multi-use invite redeemable and records the first redemption", async () => {
    const { uid, code } = await storeInvite(false);
    expect(await markInviteRedeemed(handle.db, uid, at(1000))).toBe(true);
    expect(await markInviteRedeemed(handle.db, uid, at(2000))).toBe(true);
    expect((await findRedeemableInvite(handle.db, code, at(3000)))?.uid).toBe(uid);
    expect((await row(uid)).redeemTime?.getTime()).toBe(at(1000).getTime());
  });

  it("refuses an expired or unknown invite", async () => {
    const { uid } = await storeInvite(true);
    expect(await markInviteRedeemed(handle.db, uid, at(HOUR))).toBe(false);
    expect((await row(uid)).redeemTime).toBeNull();
    expect(await markInviteRedeemed(handle.db, `${groupUid}/0000000000000000`, at(1000))).toBe(false);
  });
});
