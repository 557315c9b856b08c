import { randomBytes } from "node:crypto";
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import type { EventRecorder } from "../../events/index.js";
import { grantRole } from "../../bindings/index.js";
import { MAX_NAME_LENGTH, schema, type Executor } from "../../db/index.js";
import type { SignedInPerson } from "./upstream.js";

/**
 * A person's identity: root-level (no group), found by the issuer and
 * subject that signed them in; created at their first login. Returns its uid.
 */
export async function findOrCreatePersonIdentity(tx: Executor, person: SignedInPerson, now: Date): Promise<string> {
  const t = schema.identities;
  // Two first logins of one person at once must not make two identities.
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${JSON.stringify(["login", person.issuer, person.subject])}, 0))`);
  const [found] = await tx
    .select({ uid: t.uid })
    .from(t)
    .where(and(isNull(t.parentUid), eq(t.claimIssuer, person.issuer), eq(t.claimSubject, person.subject)))
    .orderBy(asc(t.createTime), asc(t.uid))
    .limit(1);
  if (found) {
    await tx.update(t).set({ lastSeenTime: now }).where(eq(t.uid, found.uid));
    return found.uid;
  }
  // A single segment of 16 hex, like the bootstrap identity's.
  const uid = randomBytes(8).toString("hex");
  await tx.insert(t).values({
    uid,
    parentUid: null,
    name: person.name.slice(0, MAX_NAME_LENGTH),
    description: `Signed in through ${person.issuer}`.slice(0, 4096),
    claimIssuer: person.issuer,
    claimSubject: person.subject,
    lastSeenTime: now,
    createTime: now,
    updateTime: now,
  });
  return uid;
}

/**
 * An organization's IdentityProvider binds its default role at the
 * organization the first time the person comes through it: when they hold
 * no role there yet (so a role an owner gave them later is never added to).
 * The binding is recorded with the person as its actor. True when it was made.
 */
export async function bindDefaultRole(
  tx: Executor,
  events: EventRecorder,
  groupUid: string,
  identityUid: string,
  roleUid: string,
  now: Date,
): Promise<boolean> {
  const b = schema.roleBindings;
  const [held] = await tx
    .select({ uid: b.uid })
    .from(b)
    .where(and(eq(b.parentUid, groupUid), eq(b.identityUid, identityUid)))
    .limit(1);
  if (held) return false;
  return grantRole(tx, events, groupUid, { identityUid, roleUid, now, actor: identityUid });
}
