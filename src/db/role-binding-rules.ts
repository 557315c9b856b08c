import { count, eq } from "drizzle-orm";
import type { Executor } from "./client.js";
import { roleBindings } from "./schema.js";

// Rules other resources have about role bindings, kept beside the tables
// rather than in the services that apply them (docs/design.md, "Resources").

/** How many bindings grant `roleUid` (a role in use cannot be deleted). */
export async function countRoleBindings(db: Executor, roleUid: string): Promise<number> {
  const [row] = await db.select({ n: count() }).from(roleBindings).where(eq(roleBindings.roleUid, roleUid));
  return row?.n ?? 0;
}

/** Removes a group's access policy: its bindings go with the group. */
export async function deleteGroupRoleBindings(db: Executor, groupUid: string): Promise<void> {
  await db.delete(roleBindings).where(eq(roleBindings.parentUid, groupUid));
}
