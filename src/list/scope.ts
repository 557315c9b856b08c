import { and, eq, gt, inArray, lt, or, sql, type Placeholder, type SQL } from "drizzle-orm";
import type { PgColumn } from "drizzle-orm/pg-core";
import { groupAndAncestors } from "../db/index.js";
import { invalidArgument } from "../errors/index.js";

/** The uidp.* filters of a List request (platform.common.v1.UIDPFilter). */
export interface UidpFilter {
  ancestorsOf: string;
  descendantsOf: string;
  childrenOf: string;
  inRoot: string;
  ids: string[];
}

export interface ScopeColumns {
  uid: PgColumn;
  /** The hierarchical path that descendants_of and in_root match by prefix; the uid unless given (roles have single-segment uids). */
  path?: PgColumn | undefined;
  /** The group that holds the row; absent for global resources, which refuse scope filters. */
  parentUid?: PgColumn | undefined;
  /** Groups are their own hierarchy: `ancestors_of` means the groups above. */
  isGroup: boolean;
}

const MAX_IDS = 1000;

/**
 * How a condition takes a value of the request: as it is (`literal`), or as a named placeholder
 * whose value the statement is executed with, so that the List engine builds a statement's SQL
 * once for every request of its shape (list-engine.ts). Each name is one value.
 */
export type Bind = (name: string, value: string) => string | Placeholder;

export const literal: Bind = (_name, value) => value;

// Every uid below `p` starts with `p/`; in C collation those sort in
// ['p/', 'p0') since '0' follows '/', so a btree range serves the scope.
function below(uid: PgColumn, prefix: string, bind: Bind = literal, name = "below"): SQL {
  return and(gt(uid, bind(`${name}.lo`, `${prefix}/`)), lt(uid, bind(`${name}.hi`, `${prefix}0`))) as SQL;
}

/** The path itself or anything below it. */
export function atOrBelow(path: PgColumn, prefix: string, bind: Bind = literal, name = "atOrBelow"): SQL {
  return or(eq(path, bind(`${name}.eq`, prefix)), below(path, prefix, bind, name)) as SQL;
}

/** `value` is `path` or below it, as atOrBelow selects in SQL (in memory, for rows already read). */
export function isAtOrBelow(value: string | null, path: string): boolean {
  return value !== null && (value === path || isBelow(value, path));
}

/** `value` is below `path`, as `below` selects in SQL: the range ('p/', 'p0') holds exactly the strings that start with 'p/' and go on. */
function isBelow(value: string, path: string): boolean {
  return value.length > path.length + 1 && value.startsWith(`${path}/`);
}

/** A row as the in-memory matchers see it: its uid, and the group holding it (which is also its path). */
export interface HeldRow {
  uid: string;
  parentUid: string | null;
}

/**
 * In memory, what scopeConditions selects in SQL, for rows whose path is the group holding them
 * (events, matched as they arrive: docs/design.md, "Watching"). `f` has passed scopeConditions,
 * which validates it.
 */
export function scopeMatcher(f: UidpFilter | undefined): (row: HeldRow) => boolean {
  if (!f) return () => true;
  const tests: ((row: HeldRow) => boolean)[] = [];
  if (f.descendantsOf) tests.push((r) => r.parentUid !== null && isBelow(r.parentUid, f.descendantsOf));
  if (f.childrenOf) tests.push((r) => r.parentUid === f.childrenOf);
  if (f.inRoot) tests.push((r) => isAtOrBelow(r.parentUid, f.inRoot));
  if (f.ancestorsOf) {
    const groups = new Set(groupAndAncestors(f.ancestorsOf));
    tests.push((r) => r.parentUid !== null && groups.has(r.parentUid));
  }
  if (f.ids.length) {
    const ids = new Set(f.ids);
    tests.push((r) => ids.has(r.uid));
  }
  return (row) => tests.every((t) => t(row));
}

/** SQL conditions for every uidp filter that is set; they combine with AND. `bind` takes the filter's values. */
export function scopeConditions(cols: ScopeColumns, f: UidpFilter | undefined, bind: Bind = literal): SQL[] {
  if (!f) return [];
  const where: SQL[] = [];
  const parentUid = cols.parentUid;
  if (!parentUid) {
    if (f.descendantsOf || f.childrenOf || f.inRoot || f.ancestorsOf) {
      throw invalidArgument("uidp", "this resource is global; only uidp.ids applies");
    }
  } else {
    const path = cols.path ?? cols.uid;
    if (f.descendantsOf) where.push(below(path, f.descendantsOf, bind, "descendantsOf"));
    if (f.childrenOf) where.push(eq(parentUid, bind("childrenOf", f.childrenOf)));
    if (f.inRoot) where.push(atOrBelow(path, f.inRoot, bind, "inRoot"));
  }
  if (parentUid && f.ancestorsOf) {
    const groups = groupAndAncestors(f.ancestorsOf);
    if (cols.isGroup) {
      // The groups strictly above. An organization has none: the list is empty (a NUL sentinel would be refused by PostgreSQL).
      const above = groups.slice(0, -1);
      where.push(above.length ? inArray(cols.uid, bindAll(bind, "ancestorsOf", above)) : sql`false`);
    } else {
      // Resources held by the group itself or by any group above it.
      where.push(inArray(parentUid, bindAll(bind, "ancestorsOf", groups)));
    }
  }
  if (f.ids.length > MAX_IDS) throw invalidArgument("uidp.ids", `at most ${MAX_IDS} uids`);
  // One array value however many ids: a statement's SQL does not depend on how many (list-engine.ts).
  if (f.ids.length) where.push(sql`${cols.uid} = any(${bind("ids", pgTextArray(f.ids))}::text[])`);
  return where;
}

/** A PostgreSQL array literal of `values`, each quoted (a single text parameter, the same on both drivers). */
export function pgTextArray(values: readonly string[]): string {
  return `{${values.map((s) => `"${s.replace(/[\\"]/g, "\\$&")}"`).join(",")}}`;
}

function bindAll(bind: Bind, name: string, values: readonly string[]): (string | Placeholder)[] {
  return values.map((v, i) => bind(`${name}.${i}`, v));
}
