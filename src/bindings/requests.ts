import { eq, type SQL } from "drizzle-orm";
import type { CreateRoleBindingRequest, ListRoleBindingsRequest, RoleBinding } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import type { CreateRootRoleBindingRequest, ListRootRoleBindingsRequest } from "../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { assertWithinCeiling, type Grants } from "../authz/index.js";
import { parentOf, schema, type Database, type Executor } from "../db/index.js";
import { declaredEventType } from "../descriptors/index.js";
import { actorOf, type ChangeCall, type EventRecorder } from "../events/index.js";
import type { ExtraFilters } from "../list/index.js";
import { createBindings, HELD_AT_GROUP, HELD_AT_ROOT, type NewBinding } from "./create.js";
import { hydrateRoleBindings, hydrateRootRoleBindings, storedBindingMapping } from "./messages.js";
import { ROOT } from "./place.js";
import { assertIdentityBindable, assertIdentityVisible, assertRoleVisible, lockGroup } from "./references.js";

// What the API's RoleBindingsService and RootRoleBindingsService ask of bindings beyond the derived
// List/Get/Delete: their checks (visibility, membership, grant ceiling) and the parts of their
// resource definitions. The services only wire these to their handlers.

/** What creating bindings for an API call needs from the service's context. */
export interface Creating {
  db: Database;
  events: EventRecorder;
  clock: () => Date;
  /** The call's caller holds these (its grant ceiling). */
  grants: Grants;
  call: ChangeCall;
}

const recordingOf = (c: Creating) => ({ events: c.events, type: declaredEventType(c.call.method), actor: actorOf(c.call) });

/**
 * Creates bindings at group `parent`, all or none. The group, each identity and each role are
 * locked while checked, so none can be deleted before the insert commits; `field` names request
 * n's fields in errors.
 */
export function createRequested(
  c: Creating,
  parent: string,
  requests: readonly CreateRoleBindingRequest[],
  field: (n: number, name: string) => string,
): Promise<RoleBinding[]> {
  return c.db.transaction(async (tx) => {
    await lockGroup(tx, parent);
    async function* checked(): AsyncGenerator<NewBinding> {
      for (const [n, req] of requests.entries()) {
        const identity = await assertIdentityBindable(tx, c.grants, parent, req.identityUid, field(n, "identity_uid"));
        const role = await assertRoleVisible(tx, parent, req.roleUid, field(n, "role_uid"));
        assertWithinCeiling(c.grants, role.capabilities, parent, `binding role ${role.uid}`);
        yield { identityUid: identity.uid, roleUid: role.uid, createTime: c.clock() };
      }
    }
    return createBindings(tx, parent, checked(), recordingOf(c), "refuse");
  });
}

/** Creates a binding at the root; the identity and the role are locked while checked, as above. */
export async function createRootRequested(c: Creating, req: CreateRootRoleBindingRequest): Promise<RoleBinding> {
  const [made] = await c.db.transaction(async (tx) => {
    const identity = await assertIdentityVisible(tx, ROOT, req.identityUid, "identity_uid");
    const role = await assertRoleVisible(tx, ROOT, req.roleUid, "role_uid");
    assertWithinCeiling(c.grants, role.capabilities, ROOT, `binding role ${role.uid}`);
    const binding = { identityUid: identity.uid, roleUid: role.uid, createTime: c.clock() };
    return createBindings(tx, ROOT, [binding], recordingOf(c), "refuse");
  });
  return made!;
}

/** An update's new role for binding `uid` (`<group uid>/<16 hex>`): visible from its group, within the caller's ceiling. */
export async function checkNewRole(tx: Executor, grants: Grants, uid: string, roleUid: string): Promise<void> {
  const role = await assertRoleVisible(tx, parentOf(uid), roleUid, "role_uid");
  assertWithinCeiling(grants, role.capabilities, parentOf(uid), `binding role ${role.uid}`);
}

const b = schema.roleBindings;
const root = schema.rootRoleBindings;

/**
 * The parts of a group binding's resource definition (docs/design.md, "Resources"). The stored
 * row as a message carries only what Update may patch (role_uid); every answer is hydrated.
 * Bindings are not a group's contents: they are its access policy and go with it (removal.ts).
 */
export const groupBindingResource = {
  kind: "role binding",
  table: b,
  ...storedBindingMapping,
  list: { sortable: { create_time: b.createTime } },
  /** The identity, group and role filters: exact uids. */
  listFilters: (req: ListRoleBindingsRequest): ExtraFilters => {
    const where: SQL[] = [];
    if (req.identity) where.push(eq(b.identityUid, req.identity));
    if (req.group) where.push(eq(b.parentUid, req.group));
    if (req.role) where.push(eq(b.roleUid, req.role));
    return { where, key: { identity: req.identity, group: req.group, role: req.role } };
  },
  decorate: (db: Executor, page: RoleBinding[]) =>
    hydrateRoleBindings(
      db,
      page.map((m) => m.uid),
    ),
  duplicate: () => HELD_AT_GROUP,
  missingReference: "group",
};

/**
 * A root binding's: no parentUid, since the rows are global and the method's SCOPE_ROOT
 * declaration already limits the list to root capability holders. Root bindings never change (no
 * Update).
 */
export const rootBindingResource = {
  kind: "root role binding",
  table: root,
  ...storedBindingMapping,
  list: { sortable: { create_time: root.createTime } },
  listFilters: (req: ListRootRoleBindingsRequest): ExtraFilters => {
    const where: SQL[] = [];
    if (req.identity) where.push(eq(root.identityUid, req.identity));
    if (req.role) where.push(eq(root.roleUid, req.role));
    // `root` keeps a group list's page token from being taken for this list's.
    return { where, key: { root: true, identity: req.identity, role: req.role } };
  },
  decorate: (db: Executor, page: RoleBinding[]) =>
    hydrateRootRoleBindings(
      db,
      page.map((m) => m.uid),
    ),
  duplicate: () => HELD_AT_ROOT,
};
