import { create } from "@bufbuild/protobuf";
import { eq, inArray } from "drizzle-orm";
import { RoleBindingSchema, type RoleBinding } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { schema, type Executor } from "../../db/index.js";
import { toTimestamp } from "../timestamps.js";

const b = schema.roleBindings;
const i = schema.identities;
const g = schema.groups;
const r = schema.roles;

/**
 * The bindings `uids`, hydrated with their identity, group and role, in ONE
 * query whatever the number of rows, and in the order of `uids`. Uids that
 * no longer exist are left out.
 */
export async function hydrateRoleBindings(db: Executor, uids: readonly string[]): Promise<RoleBinding[]> {
  if (uids.length === 0) return [];
  const rows = await db
    .select({
      uid: b.uid,
      createTime: b.createTime,
      identity: { uid: i.uid, name: i.name, description: i.description, subject: i.claimSubject, issuer: i.claimIssuer },
      group: { uid: g.uid, name: g.name, description: g.description },
      role: { uid: r.uid, name: r.name, description: r.description },
    })
    .from(b)
    .innerJoin(i, eq(b.identityUid, i.uid))
    .innerJoin(g, eq(b.parentUid, g.uid))
    .innerJoin(r, eq(b.roleUid, r.uid))
    .where(inArray(b.uid, [...uids]));
  const byUid = new Map(rows.map((row) => [row.uid, row]));
  return uids.flatMap((uid) => {
    const row = byUid.get(uid);
    return row ? [create(RoleBindingSchema, { ...row, createTime: toTimestamp(row.createTime) })] : [];
  });
}

const root = schema.rootRoleBindings;

/**
 * Root bindings hydrated the same way, in one query and in the order of
 * `uids`; they have no group, so `group` stays unset (`null` over REST).
 */
export async function hydrateRootRoleBindings(db: Executor, uids: readonly string[]): Promise<RoleBinding[]> {
  if (uids.length === 0) return [];
  const rows = await db
    .select({
      uid: root.uid,
      createTime: root.createTime,
      identity: { uid: i.uid, name: i.name, description: i.description, subject: i.claimSubject, issuer: i.claimIssuer },
      role: { uid: r.uid, name: r.name, description: r.description },
    })
    .from(root)
    .innerJoin(i, eq(root.identityUid, i.uid))
    .innerJoin(r, eq(root.roleUid, r.uid))
    .where(inArray(root.uid, [...uids]));
  const byUid = new Map(rows.map((row) => [row.uid, row]));
  return uids.flatMap((uid) => {
    const row = byUid.get(uid);
    return row ? [create(RoleBindingSchema, { ...row, createTime: toTimestamp(row.createTime) })] : [];
  });
}
