import { eq, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { queryRows, type Executor } from "./client.js";

/**
 * A kind of resource that a group can hold; a group holding any cannot be
 * deleted. Each resource states whether it is one (`groupContent` in its
 * definition, src/services/resource.ts). Role bindings are not: they go with
 * the group (docs/design.md, "Storage", says why).
 */
export interface GroupContent {
  /** Plural noun for messages: "child groups", "identities". */
  label: string;
  table: PgTable;
  parentUid: PgColumn;
}

/** The labels of what `groupUid` still holds of `contents`, in one query; empty when the group is empty. */
export async function groupContents(db: Executor, groupUid: string, contents: readonly GroupContent[]): Promise<string[]> {
  const checks = contents.map((c) => sql`exists(select 1 from ${c.table} where ${eq(c.parentUid, groupUid)})`);
  const [row] = await queryRows<Record<string, boolean>>(
    db,
    sql`select ${sql.join(
      checks.map((c, i) => sql`${c} as ${sql.identifier(`c${i}`)}`),
      sql`, `,
    )}`,
  );
  return contents.filter((_, i) => row?.[`c${i}`] === true).map((c) => c.label);
}
