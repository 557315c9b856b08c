import { newChildUid, newRootBindingUid, schema, type Executor } from "../db/index.js";

/**
 * Grants `roleUid` to an identity at a group without the API's checks: for
 * the service itself (an organization's creator, a signed-in person's
 * default role or redeemed invite). Nothing happens when the identity
 * already holds that role there. Returns the new binding's uid, if one was made.
 */
export async function grantRole(
  tx: Executor,
  groupUid: string,
  identityUid: string,
  roleUid: string,
  now: Date,
): Promise<string | undefined> {
  const [made] = await tx
    .insert(schema.roleBindings)
    .values({ uid: newChildUid(groupUid), parentUid: groupUid, identityUid, roleUid, createTime: now })
    .onConflictDoNothing()
    .returning({ uid: schema.roleBindings.uid });
  return made?.uid;
}

/**
 * The same at the root (the bootstrap identity, PLATFORM_ADMINS at sign-in):
 * idempotent, a role an identity already holds there is left as it is.
 */
export async function grantRootRole(tx: Executor, identityUid: string, roleUid: string, now: Date): Promise<string | undefined> {
  const [made] = await tx
    .insert(schema.rootRoleBindings)
    .values({ uid: newRootBindingUid(), identityUid, roleUid, createTime: now })
    .onConflictDoNothing()
    .returning({ uid: schema.rootRoleBindings.uid });
  return made?.uid;
}
