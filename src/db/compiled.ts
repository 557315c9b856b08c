import type { SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { rowsOf, type Executor } from "./client.js";

// Drizzle turns an `sql` template into text and parameters on every run, walking every nested
// piece; for the write statements that each API call makes (a create and its event), that walk
// cost more CPU than the rest of the call's SQL handling (docs/design.md, "Storage"). A compiled
// statement is built once per shape, with placeholders for its values, and then only run.

/** A statement shape, by a key that names it; its values fill `sql.placeholder`s by name. */
export interface CompiledStatement {
  /** Names the shape, from code only (never from request data), so the cache stays bounded. */
  key: string;
  /** Builds the shape; called once per key. */
  build: () => SQL;
  values: Record<string, unknown>;
}

const dialect = new PgDialect();
const built = new Map<string, { sql: string; params: unknown[] }>();

/** Runs `statement` on `db` (in a transaction or not), its text built once and kept prepared. */
export async function runCompiled<Row extends Record<string, unknown>>(db: Executor, statement: CompiledStatement): Promise<Row[]> {
  let query = built.get(statement.key);
  if (!query) {
    query = dialect.sqlToQuery(statement.build());
    built.set(statement.key, query);
  }
  // Named, so postgres.js keeps it prepared on each connection: one round trip, not two.
  return rowsOf<Row>(await db._.session.prepareQuery(query, undefined, statement.key, false).execute(statement.values));
}
