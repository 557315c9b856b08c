import { create } from "@bufbuild/protobuf";
import { timestampFromDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { eq, inArray } from "drizzle-orm";
import { RoleBindingSchema, type RoleBinding } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { schema, type Executor } from "../db/index.js";
import { invalidArgument, notFound } from "../errors/index.js";
import { ROOT } from "./place.js";

const b = schema.roleBindings;
const i = schema.identities;
const g = schema.groups;
const r = schema.roles;

// The identity and role as every hydrated binding shows them, group or root.
const identityColumns = { uid: i.uid, name: i.name, description: i.description, subject: i.claimSubject, issuer: i.claimIssuer };
const roleColumns = { uid: r.uid, name: r.name, description: r.description };

/**
 * A stored binding as a message, for group and root bindings alike (their
 * resource definitions spread it): the row carries only what may change
 * (role_uid); every response is hydrated by the functions below instead.
 */
export const storedBindingMapping = {
  schema: RoleBindingSchema,
  toMessage: (row: { uid: string; roleUid: string }): RoleBinding => create(RoleBindingSchema, { uid: row.uid, roleUid: row.roleUid }),
  validate: (b: RoleBinding): void => {
    if (!b.roleUid) throw invalidArgument("role_uid", "is required");
  },
  toColumns: (b: RoleBinding) => ({ roleUid: b.roleUid ?? "" }),
};

/**
 * A joined row as a message: the references hydrated, and their uids beside them under the
 * names a create request gives them (`identityUid`, `roleUid`).
 */
function hydrated(row: { uid: string; identity: { uid: string }; role: { uid: string } }, createTime: Timestamp): RoleBinding {
  return create(RoleBindingSchema, { ...row, identityUid: row.identity.uid, roleUid: row.role.uid, createTime });
}

/** Joined rows as messages, in the order of `uids`; uids with no row are left out. */
function inOrder<R extends { uid: string; createTime: Date }>(
  uids: readonly string[],
  rows: readonly R[],
  toMessage: (row: R, createTime: Timestamp) => RoleBinding,
): RoleBinding[] {
  const byUid = new Map(rows.map((row) => [row.uid, row]));
  return uids.flatMap((uid) => {
    const row = byUid.get(uid);
    return row ? [toMessage(row, timestampFromDate(row.createTime))] : [];
  });
}

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
      identity: identityColumns,
      group: { uid: g.uid, name: g.name, description: g.description },
      role: roleColumns,
    })
    .from(b)
    .innerJoin(i, eq(b.identityUid, i.uid))
    .innerJoin(g, eq(b.parentUid, g.uid))
    .innerJoin(r, eq(b.roleUid, r.uid))
    .where(inArray(b.uid, [...uids]));
  return inOrder(uids, rows, (row, createTime) => hydrated(row, createTime));
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
      identity: identityColumns,
      role: roleColumns,
    })
    .from(root)
    .innerJoin(i, eq(root.identityUid, i.uid))
    .innerJoin(r, eq(root.roleUid, r.uid))
    .where(inArray(root.uid, [...uids]));
  return inOrder(uids, rows, (row, createTime) => hydrated(row, createTime));
}

/** The bindings `uids` at `at` (a group, or ROOT), hydrated in one query. */
export function hydrateBindings(db: Executor, at: string, uids: readonly string[]): Promise<RoleBinding[]> {
  return at === ROOT ? hydrateRootRoleBindings(db, uids) : hydrateRoleBindings(db, uids);
}

/** One binding, hydrated in one query (the row with its identity, group and role); NOT_FOUND when it does not exist. */
export async function hydratedBinding(db: Executor, uid: string): Promise<RoleBinding> {
  const [binding] = await hydrateRoleBindings(db, [uid]);
  if (!binding) throw notFound("role binding", uid);
  return binding;
}

/** The same for a root binding. */
export async function hydratedRootBinding(db: Executor, uid: string): Promise<RoleBinding> {
  const [binding] = await hydrateRootRoleBindings(db, [uid]);
  if (!binding) throw notFound("root role binding", uid);
  return binding;
}
