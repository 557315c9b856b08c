import { createContextKey } from "@connectrpc/connect";
import { getTableName, isNull, or, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { atOrBelow, isAtOrBelow, literal, pgTextArray, type Bind, type HeldRow } from "./scope.js";

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

/**
 * Up to this many roots, each is a condition of its own (three bind parameters, one
 * index range); past it, the roots travel as one array parameter (docs/security.md, "Input").
 */
export const INLINE_ROOTS = 8;

// A caller with many roots sends them as one array literal: quoted once per visibility object
// (the authorizer hands the same object to each call of one caller), not on every page.
const rootsLiterals = new WeakMap<ListVisibility, string>();

/**
 * What the SQL of visibilityCondition depends on (its values aside): everything, nothing, how
 * many roots inline, or many in one array. Part of the List engine's statement key.
 */
export function visibilityShape(v: ListVisibility): string {
  if (v.all) return "all";
  return v.roots.length > INLINE_ROOTS ? "many" : `roots${v.roots.length}`;
}

/** The condition limiting a List to what the caller may see; `bind` takes its values (the roots). */
export function visibilityCondition(cols: VisibilityColumns, v: ListVisibility, bind: Bind = literal): SQL | undefined {
  if (v.all) return undefined;
  const path = cols.path ?? cols.uid;
  const globalRows = cols.globalRowsVisible && cols.parentUid ? cols.parentUid : undefined;
  if (v.roots.length > INLINE_ROOTS) {
    let roots = rootsLiterals.get(v);
    if (roots === undefined) {
      roots = pgTextArray(v.roots);
      rootsLiterals.set(v, roots);
    }
    return underManyRoots(cols.uid, path, bind("visible.roots", roots), globalRows);
  }
  const parts: SQL[] = v.roots.map((r, i) => atOrBelow(path, r, bind, `visible.${i}`));
  if (globalRows) parts.push(isNull(globalRows));
  return parts.length ? (or(...parts) as SQL) : sql`false`;
}

/**
 * atOrBelow for every root, as a semi-join: for each root, one range of the path's btree index
 * (C collation: [r, r0) holds r and everything below, and the siblings the filter drops), so the
 * cost is one index probe per root plus the rows found, and one bind parameter however many roots
 * there are (PostgreSQL takes at most 65,535). `uid` is the table's primary key. The fence
 * (OFFSET 0) keeps the planner from turning the join inside out into roots × rows comparisons.
 */
function underManyRoots(uid: PgColumn, path: PgColumn, roots: string | Placeholder, globalRows: PgColumn | undefined): SQL {
  const table = sql.identifier(getTableName(uid.table));
  const v = (col: PgColumn) => sql`v.${sql.identifier(col.name)}`;
  const global = globalRows ? sql` union all (select ${v(uid)} from ${table} as v where ${v(globalRows)} is null)` : sql``;
  return sql`${uid} in ((select ${v(uid)} from unnest(${roots}::text[]) as r(p) cross join lateral (select ${v(uid)} from ${table} as v where ${v(path)} >= r.p and ${v(path)} < r.p || '0' and (${v(path)} = r.p or ${v(path)} > r.p || '/')) as v offset 0)${global})`;
}

/** In memory, what visibilityCondition selects in SQL, for rows whose path is the group holding them (events as they arrive). */
export function visibilityMatcher(v: ListVisibility): (row: HeldRow) => boolean {
  if (v.all) return () => true;
  if (v.roots.length <= INLINE_ROOTS) {
    const roots = v.roots;
    return (row) => roots.some((r) => isAtOrBelow(row.parentUid, r));
  }
  // A set lookup for the path and each prefix ending before a '/' that something follows:
  // exactly the roots isAtOrBelow accepts, in time bound by the path, not the roots.
  const roots = new Set(v.roots);
  return ({ parentUid: p }) => {
    if (p === null) return false;
    if (roots.has(p)) return true;
    for (let i = p.indexOf("/"); i >= 0 && i < p.length - 1; i = p.indexOf("/", i + 1)) if (roots.has(p.slice(0, i))) return true;
    return false;
  };
}
