import { count, eq } from "drizzle-orm";
import { RoleBindingSchema, RoleBindingsService } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService } from "../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { inPieces, parentOf, schema, type Executor } from "../db/index.js";
import { declaredEventType } from "../descriptors/index.js";
import { actorOf, type ChangeCall, type EventRecorder } from "../events/index.js";
import { hydrateRoleBindings, hydrateRootRoleBindings } from "./messages.js";

const ROLE_BINDING_DELETED = declaredEventType(RoleBindingsService.method.deleteRoleBinding);
const ROOT_ROLE_BINDING_DELETED = declaredEventType(RootRoleBindingsService.method.deleteRootRoleBinding);

/**
 * Bindings go with what they bind (docs/design.md, "Events"): a group's with the group, deleted
 * here (the foreign key to groups does not cascade); an identity's, group and root ones, with the
 * identity, by the foreign keys' cascade. Each is
 * recorded as deleted, as its own delete would be, by the same actor. Run in the delete's
 * transaction after its row lock (which keeps new bindings out) and before the identity goes,
 * since the events show the bindings as a Get did.
 */
export async function removeBindingsWith(
  tx: Executor,
  events: EventRecorder,
  call: ChangeCall,
  of: { group: string } | { identity: string },
): Promise<void> {
  await recordGoing(tx, events, call, of);
  if ("group" in of) await tx.delete(schema.roleBindings).where(eq(schema.roleBindings.parentUid, of.group));
}

async function recordGoing(tx: Executor, events: EventRecorder, call: ChangeCall, of: { group: string } | { identity: string }) {
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

/** How many bindings grant `roleUid` at a group (a role in use cannot be deleted). */
export async function countRoleBindings(db: Executor, roleUid: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(schema.roleBindings).where(eq(schema.roleBindings.roleUid, roleUid));
  return row?.n ?? 0;
}
