import { createHash } from "node:crypto";
import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import type { Executor } from "./client.js";
import * as schema from "./schema.js";

// The invites' side of redeeming one at login (GroupInvitesService makes and lists them).

export type GroupInviteRow = typeof schema.groupInvites.$inferSelect;

/** The stored form of an invite code: its SHA-256, hex (only the hash is stored). */
export function inviteCodeHash(code: string): string {
  return createHash("sha256").update(code, "utf8").digest("hex");
}

/**
 * The invite a code redeems at `now`: not expired and, when single-use, not
 * yet redeemed; undefined otherwise. The caller (login) still checks the
 * invite's `email` restriction and then calls markInviteRedeemed.
 */
export async function findRedeemableInvite(db: Executor, code: string, now: Date): Promise<GroupInviteRow | undefined> {
  const t = schema.groupInvites;
  const [row] = await db
    .select()
    .from(t)
    .where(and(eq(t.codeHash, inviteCodeHash(code)), gt(t.expirationTime, now), or(eq(t.singleUse, false), isNull(t.redeemTime))));
  return row;
}

/** The invite a code names, whatever its state: login uses it to say why a code is not redeemable. */
export async function findInviteByCode(db: Executor, code: string): Promise<GroupInviteRow | undefined> {
  const [row] = await db
    .select()
    .from(schema.groupInvites)
    .where(eq(schema.groupInvites.codeHash, inviteCodeHash(code)));
  return row;
}

/**
 * Records a redemption of the invite `uid` at `now` (redeem_time keeps the
 * first one). Atomic: false when the invite expired, was deleted, or is
 * single-use and another redemption got there first.
 */
export async function markInviteRedeemed(db: Executor, uid: string, now: Date): Promise<boolean> {
  const t = schema.groupInvites;
  const first = isNull(t.redeemTime);
  const rows = await db
    .update(t)
    .set({
      redeemTime: sql`coalesce(${t.redeemTime}, ${now.toISOString()}::timestamptz)`,
      updateTime: sql`case when ${first} then ${now.toISOString()}::timestamptz else ${t.updateTime} end`,
    })
    .where(and(eq(t.uid, uid), gt(t.expirationTime, now), or(eq(t.singleUse, false), first)))
    .returning({ uid: t.uid });
  return rows.length === 1;
}
