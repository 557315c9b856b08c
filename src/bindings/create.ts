import { RoleBindingSchema, RoleBindingsService, type RoleBinding } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService } from "../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { newChildUid, newRootBindingUid, schema, type Executor } from "../db/index.js";
import { declaredEventType } from "../descriptors/index.js";
import { alreadyExists, isForeignKeyViolation, isUniqueViolation, notFound } from "../errors/index.js";
import type { EventRecorder } from "../events/index.js";
import { hydrateBindings } from "./messages.js";
import { ROOT } from "./place.js";

/** One binding to make: who gets which role, stamped `createTime`. */
export interface NewBinding {
  identityUid: string;
  roleUid: string;
  createTime: Date;
}

/** How the bindings made are recorded: as events of `type` by `actor` (docs/design.md, "Events"). */
export interface Recording {
  events: EventRecorder;
  /** The type the API's create method declares; "" records nothing. */
  type: string;
  /** Whose action made them; "" for the server's own configuration. */
  actor: string;
}

/** Refusals of a binding the API was asked for, as the store words them for an update. */
export const HELD_AT_GROUP = "the identity already has this role at this group";
export const HELD_AT_ROOT = "the identity already has this role at the root";

/**
 * Inserts one binding at `at` (a group, or ROOT). `skip`: a role the identity already holds there
 * is left as it is (undefined); `refuse`: ALREADY_EXISTS, and NOT_FOUND for a group that is gone.
 */
async function insert(tx: Executor, at: string, b: NewBinding, held: "skip" | "refuse"): Promise<string | undefined> {
  const table = at === ROOT ? schema.rootRoleBindings : schema.roleBindings;
  const values = at === ROOT ? { uid: newRootBindingUid(), ...b } : { uid: newChildUid(at), parentUid: at, ...b };
  try {
    const query = tx.insert(table).values(values);
    const [made] = await (held === "skip" ? query.onConflictDoNothing() : query).returning({ uid: table.uid });
    return made?.uid;
  } catch (e) {
    if (isUniqueViolation(e))
      throw alreadyExists(at === ROOT ? "root role binding" : "role binding", "", at === ROOT ? HELD_AT_ROOT : HELD_AT_GROUP);
    // Only the binding's own row: a violation elsewhere in the transaction is not a missing group.
    if (at !== ROOT && isForeignKeyViolation(e, "role_bindings")) throw notFound("group", at);
    throw e;
  }
}

/**
 * Every binding is made here, by the API and by the server alike: inserted one by one (`bindings`
 * may check each before it is yielded, inside `tx`), then hydrated in ONE query, and each recorded
 * as created with its hydrated message, the same message the answer shows. Returns them in order.
 */
export async function createBindings(
  tx: Executor,
  at: string,
  bindings: Iterable<NewBinding> | AsyncIterable<NewBinding>,
  recording: Recording | undefined,
  held: "skip" | "refuse",
): Promise<RoleBinding[]> {
  const uids: string[] = [];
  for await (const b of bindings) {
    const uid = await insert(tx, at, b, held);
    if (uid) uids.push(uid);
  }
  const made = await hydrateBindings(tx, at, uids);
  if (recording?.type) {
    for (const after of made) {
      const group = at === ROOT ? null : at;
      await recording.events.changeBy(tx, recording.type, recording.actor, { schema: RoleBindingSchema, subject: after.uid, group, after });
    }
  }
  return made;
}

const GROUP_BINDING_CREATED = declaredEventType(RoleBindingsService.method.createRoleBinding);
const ROOT_BINDING_CREATED = declaredEventType(RootRoleBindingsService.method.createRootRoleBinding);

/** A binding the server makes itself, outside an API call. */
export interface ServerGrant {
  identityUid: string;
  roleUid: string;
  now: Date;
  /** Whose action made the binding; "" for the server's own configuration. */
  actor: string;
}

/**
 * Grants a role at `at` (a group, or ROOT) without the API's checks: an organization's creator as
 * its owner, a signed-in person's default role or redeemed invite, PLATFORM_ADMINS and the
 * bootstrap identity at the root. Nothing happens when the identity already holds that role there.
 * The binding is recorded as the API's create method records one, so the audit log and a
 * subscriber mirroring bindings see it too (docs/design.md, "Events"); `events` undefined records
 * nothing (the bootstrap identity's binding, healed at every start by no one's action). True when
 * a binding was made.
 */
export async function grantRole(tx: Executor, events: EventRecorder | undefined, at: string, grant: ServerGrant): Promise<boolean> {
  const recording = events && { events, type: at === ROOT ? ROOT_BINDING_CREATED : GROUP_BINDING_CREATED, actor: grant.actor };
  const binding = { identityUid: grant.identityUid, roleUid: grant.roleUid, createTime: grant.now };
  const made = await createBindings(tx, at, [binding], recording, "skip");
  return made.length > 0;
}
