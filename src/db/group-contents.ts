import { eq, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { queryRows, type Executor } from "./client.js";
import { groups, identities } from "./schema.js";

/** A kind of resource that a group can hold; a group holding any cannot be deleted. */
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
