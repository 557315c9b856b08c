import { eq, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { queryRows, type Executor } from "./client.js";
import { accountAssociations, groupInvites, groups, identities, identityProviders, repos, roles } from "./schema.js";

/**
 * A kind of resource that a group can hold; a group holding any cannot be
 * deleted. Role bindings are not in this list: they are the group's access
 * policy and go with it (see groups.ts), since the owner binding that
 * creating an organization makes would otherwise keep it forever.
 */
interface GroupContent {
  /** Plural noun for messages: "child groups", "identities". */
  label: string;
  table: PgTable;
  parentUid: PgColumn;
}

// Every table whose rows live inside a group registers here, once.
const GROUP_CONTENTS: GroupContent[] = [
  { label: "child groups", table: groups, parentUid: groups.parentUid },
  { label: "identities", table: identities, parentUid: identities.parentUid },
  { label: "roles", table: roles, parentUid: roles.parentUid },
  // Tags live in repos, so a group holding tags holds their repos.
  { label: "repos", table: repos, parentUid: repos.parentUid },
  { label: "identity providers", table: identityProviders, parentUid: identityProviders.parentUid },
  // Its uid is the group's own uid, so it is found by parent_uid, not by a uid prefix.
  { label: "an account association", table: accountAssociations, parentUid: accountAssociations.parentUid },
  { label: "group invites", table: groupInvites, parentUid: groupInvites.parentUid },
];

/** The labels of what `groupUid` still holds, in one query; empty when the group is empty. */
export async function groupContents(db: Executor, groupUid: string): Promise<string[]> {
  const checks = GROUP_CONTENTS.map(
    (c) => sql`exists(select 1 from ${c.table} where ${eq(c.parentUid, groupUid)})`,
  );
  const [row] = await queryRows<Record<string, boolean>>(
    db,
    sql`select ${sql.join(checks.map((c, i) => sql`${c} as ${sql.identifier(`c${i}`)}`), sql`, `)}`,
  );
  return GROUP_CONTENTS.filter((_, i) => row?.[`c${i}`] === true).map((c) => c.label);
}
