import { createContextKey } from "@connectrpc/connect";
import { isNull, or, sql, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { atOrBelow, isAtOrBelow, type HeldRow } from "./scope.js";

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
  const parts: SQL[] = v.roots.map((r) => atOrBelow(path, r));
  if (cols.globalRowsVisible && cols.parentUid) parts.push(isNull(cols.parentUid));
  return parts.length ? (or(...parts) as SQL) : sql`false`;
}

/** In memory, what visibilityCondition selects in SQL, for rows whose path is the group holding them (events as they arrive). */
export function visibilityMatcher(v: ListVisibility): (row: HeldRow) => boolean {
  if (v.all) return () => true;
  const roots = v.roots;
  return (row) => roots.some((r) => isAtOrBelow(row.parentUid, r));
}
