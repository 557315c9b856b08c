import { createContextKey } from "@connectrpc/connect";
import { and, eq, gt, isNull, lt, or, sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";

/** Where a List may look: everywhere, or at and below these group paths. */
export type ListVisibility = { all: true } | { all: false; roots: string[] };

/**
 * Set by the authorization interceptor on every List call: the engine
 * refuses to list group-held resources without it (fail closed).
 */
export const listVisibilityKey = createContextKey<ListVisibility | undefined>(undefined, { description: "list visibility" });

export interface VisibilityColumns {
  uid: PgColumn;
  path?: PgColumn | undefined;
  parentUid?: PgColumn | undefined;
  /** Rows without a parent (built-in roles) are visible to every caller. */
  globalRowsVisible?: boolean | undefined;
}

/** The condition limiting a List to what the caller may see. */
export function visibilityCondition(cols: VisibilityColumns, v: ListVisibility): SQL | undefined {
  if (v.all) return undefined;
  const path = cols.path ?? cols.uid;
  const parts: SQL[] = v.roots.map((r) => or(eq(path, r), and(gt(path, `${r}/`), lt(path, `${r}0`))) as SQL);
  if (cols.globalRowsVisible && cols.parentUid) parts.push(isNull(cols.parentUid));
  return parts.length ? (or(...parts) as SQL) : sql`false`;
}
