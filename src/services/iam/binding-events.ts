import { RoleBindingSchema, RoleBindingsService } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { eq } from "drizzle-orm";
import { grantRole, grantRootRole } from "../../authz/grant-role.js";
import { inPieces, parentOf, schema, type Executor } from "../../db/index.js";
import { actorOf, declaredEventType, type ChangeCall, type EventRecorder } from "../../events/index.js";
import { hydrateRoleBindings, hydrateRootRoleBindings } from "./role-binding-hydration.js";

// Bindings the server makes or removes itself are recorded as the events the API's create and
// delete methods declare, with the same data, so the audit log and a subscriber mirroring bindings
// see these too, not only those made and deleted through the API (docs/design.md, "Events"). Made:
// an organization's creator as its owner, a signed-in person's default role or redeemed invite,
// PLATFORM_ADMINS at the root. Removed: a group's bindings with the group, an identity's with it.

const ROLE_BINDING_CREATED = declaredEventType(RoleBindingsService.method.createRoleBinding);
const ROOT_ROLE_BINDING_CREATED = declaredEventType(RootRoleBindingsService.method.createRootRoleBinding);
const ROLE_BINDING_DELETED = declaredEventType(RoleBindingsService.method.deleteRoleBinding);
const ROOT_ROLE_BINDING_DELETED = declaredEventType(RootRoleBindingsService.method.deleteRootRoleBinding);

export interface ServerGrant {
  identityUid: string;
  roleUid: string;
  now: Date;
  /** Whose action made the binding; "" for the server's own configuration. */
  actor: string;
}

/** Grants `roleUid` at `groupUid` (grantRole) and records the binding it made; true when it made one. */
export async function grantRoleRecorded(tx: Executor, events: EventRecorder, groupUid: string, grant: ServerGrant): Promise<boolean> {
  const uid = await grantRole(tx, groupUid, grant.identityUid, grant.roleUid, grant.now);
  if (!uid) return false;
  const [after] = await hydrateRoleBindings(tx, [uid]);
  await events.changeBy(tx, ROLE_BINDING_CREATED, grant.actor, { schema: RoleBindingSchema, subject: uid, group: groupUid, after });
  return true;
}

/** The same at the root (grantRootRole): a global event, like a root binding made through the API. */
export async function grantRootRoleRecorded(tx: Executor, events: EventRecorder, grant: ServerGrant): Promise<boolean> {
  const uid = await grantRootRole(tx, grant.identityUid, grant.roleUid, grant.now);
  if (!uid) return false;
  const [after] = await hydrateRootRoleBindings(tx, [uid]);
  await events.changeBy(tx, ROOT_ROLE_BINDING_CREATED, grant.actor, { schema: RoleBindingSchema, subject: uid, group: null, after });
  return true;
}

/**
 * Records the deletion of the bindings that go with what `call` deletes: a group's, or an
 * identity's (its group and root bindings), as their own delete would, by the same actor. Run in
 * the delete's transaction after its row lock (which keeps new bindings out) and before the
 * bindings go, since their events show them as a Get did.
 */
export async function recordBindingsGoing(
  tx: Executor,
  events: EventRecorder,
  call: ChangeCall,
  of: { group: string } | { identity: string },
): Promise<void> {
  if (!declaredEventType(call.method)) return;
  const actor = actorOf(call);
  const { roleBindings: b, rootRoleBindings: root } = schema;
  const held = "group" in of ? eq(b.parentUid, of.group) : eq(b.identityUid, of.identity);
  const uids = (await tx.select({ uid: b.uid }).from(b).where(held)).map((r) => r.uid);
  for (const piece of inPieces(uids)) {
    for (const before of await hydrateRoleBindings(tx, piece)) {
      await events.changeBy(tx, ROLE_BINDING_DELETED, actor, {
        schema: RoleBindingSchema,
        subject: before.uid,
        group: parentOf(before.uid),
        before,
      });
    }
  }
  if (!("identity" in of)) return;
  const rootUids = (await tx.select({ uid: root.uid }).from(root).where(eq(root.identityUid, of.identity))).map((r) => r.uid);
  for (const piece of inPieces(rootUids)) {
    for (const before of await hydrateRootRoleBindings(tx, piece)) {
      await events.changeBy(tx, ROOT_ROLE_BINDING_DELETED, actor, { schema: RoleBindingSchema, subject: before.uid, group: null, before });
    }
  }
}
