import { and, eq } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import type { Grants } from "../authz/index.js";
import { groupAndAncestors, organizationOf, schema, type Executor } from "../db/index.js";
import { failedPrecondition, invalidArgument, notFound } from "../errors/index.js";
import { atOrBelow } from "../list/scope.js";
import { placeName, ROOT } from "./place.js";

// What a resource created in a group may reference: identities and custom
// roles held by the group or a group above it, and the global ones (built-in
// roles, the bootstrap identity). Every check locks the referenced row
// FOR KEY SHARE, so inside the caller's transaction a concurrent delete of
// it waits for the commit (and then sees the new reference) instead of
// slipping between the check and the insert.

type GroupRow = typeof schema.groups.$inferSelect;

/** A table of things held by a group or global (parent_uid NULL). */
type HeldTable = typeof schema.roles | typeof schema.identities;

async function lockRow<T extends PgTable>(db: Executor, table: T, uid: PgColumn, value: string): Promise<T["$inferSelect"] | undefined> {
  const [row] = await db
    .select()
    .from(table as PgTable)
    .where(eq(uid, value))
    .for("key share");
  return row as T["$inferSelect"] | undefined;
}

/** The group a resource is being created in, locked; NOT_FOUND when it does not exist. */
export async function lockGroup(db: Executor, groupUid: string): Promise<GroupRow> {
  const group = await lockRow(db, schema.groups, schema.groups.uid, groupUid);
  if (!group) throw notFound("group", groupUid);
  return group;
}

/**
 * The row `uid` of `table`, locked, when it is global or held by `groupUid`
 * or a group above it; otherwise INVALID_ARGUMENT on `field` (the row is a
 * reference in the request, not the resource asked for).
 */
async function assertVisible<T extends HeldTable>(
  db: Executor,
  kind: string,
  table: T,
  groupUid: string,
  uid: string,
  field: string,
): Promise<T["$inferSelect"]> {
  if (!uid) throw invalidArgument(field, "is required");
  const row = await lockRow(db, table, table.uid, uid);
  if (!row) throw invalidArgument(field, `${kind} ${uid} does not exist`);
  if (row.parentUid !== null && !groupAndAncestors(groupUid).includes(row.parentUid)) {
    throw invalidArgument(field, `${kind} ${uid} is not visible from ${placeName(groupUid)}: it belongs to group ${row.parentUid}`);
  }
  return row;
}

/** A built-in role, or a custom role of `groupUid` or a group above it. At ROOT: built-in roles only. */
export const assertRoleVisible = (db: Executor, groupUid: string, roleUid: string, field: string) =>
  assertVisible(db, "role", schema.roles, groupUid, roleUid, field);

/** An identity held by `groupUid` or a group above it, or a root-level one (people, the bootstrap identity). At ROOT: root-level ones only. */
export const assertIdentityVisible = (db: Executor, groupUid: string, identityUid: string, field: string) =>
  assertVisible(db, "identity", schema.identities, groupUid, identityUid, field);

/**
 * An identity a role binding at group `groupUid` may name: one visible from
 * there (assertIdentityVisible) and, when it is a person (root-level), one
 * who is already a member of the group's organization, i.e. holds a role
 * somewhere in it (docs/security.md, "Binding people"). A person joins an
 * organization by their own doing: redeeming an invite, signing in through
 * the organization's identity provider, founding it. Otherwise an owner could
 * bind any person's uid without their consent, and read their name, issuer
 * and subject off the binding. Platform administrators (`identity.list` at
 * the root: they may read every identity already) may bind anyone.
 *
 * A uid of the root-level shape that names no member is refused with the same
 * error whether or not it exists, so the check tells nothing about strangers.
 */
export async function assertIdentityBindable(db: Executor, grants: Grants, groupUid: string, identityUid: string, field: string) {
  const rootLevel = identityUid !== "" && !identityUid.includes("/");
  if (rootLevel && groupUid !== ROOT && !grants.holdsAtRoot("identity.list")) {
    const organization = organizationOf(groupUid);
    const b = schema.roleBindings;
    const [member] = await db
      .select({ uid: b.uid })
      .from(b)
      .where(and(eq(b.identityUid, identityUid), atOrBelow(b.parentUid, organization)))
      .limit(1);
    if (!member) {
      throw failedPrecondition(
        "NOT_IN_ORGANIZATION",
        `${field}: identity ${identityUid} holds no role in organization ${organization}: a person joins it by redeeming an invite (GroupInvites) or by signing in through its identity provider`,
        identityUid,
      );
    }
  }
  return assertIdentityVisible(db, groupUid, identityUid, field);
}
