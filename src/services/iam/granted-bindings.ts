import { RoleBindingSchema, RoleBindingsService } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { grantRole, grantRootRole } from "../../authz/grant-role.js";
import type { Executor } from "../../db/index.js";
import { declaredEventType, type EventRecorder } from "../../events/index.js";
import { hydrateRoleBindings, hydrateRootRoleBindings } from "./role-binding-hydration.js";

// Bindings the server makes itself (an organization's creator as its owner, a signed-in person's
// default role or redeemed invite, PLATFORM_ADMINS at the root) are recorded as the events the API's
// create methods declare, with the same data, so the audit log and a subscriber mirroring bindings
// see these too, not only those made through the API (docs/design.md, "Events").

const ROLE_BINDING_CREATED = declaredEventType(RoleBindingsService.method.createRoleBinding);
const ROOT_ROLE_BINDING_CREATED = declaredEventType(RootRoleBindingsService.method.createRootRoleBinding);

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
