import { getTableColumns, type Query } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import type { Executor } from "./client.js";

// Drizzle maps each row of a select by walking its field list per value: a type check of every
// field (`is`, a prototype walk), the field's path, then the column's decoder. For a page of 50
// rows that was a sixth of a List call's CPU (docs/design.md, "Storage"). A table's rows are the
// same columns in the same order every time, so the decoders are found once per table, and each
// row is one loop over the driver's value array.

/** Reads one table's rows out of the value arrays of a select of all its columns, in table order. */
export interface RowReader<Row> {
  /** How many values a row takes. */
  readonly width: number;
  /** The row whose first column is `values[at]`; NULL stays null, anything else goes through its column's decoder. */
  read(values: readonly unknown[], at?: number): Row;
}

const readers = new WeakMap<PgTable, RowReader<unknown>>();

/** The reader of `table`'s rows (built once per table). */
export function rowReader<T extends PgTable>(table: T): RowReader<T["$inferSelect"]> {
  let reader = readers.get(table);
  if (reader === undefined) {
    const entries = Object.entries(getTableColumns(table) as Record<string, PgColumn>);
    const keys = entries.map(([key]) => key);
    const columns = entries.map(([, column]) => column);
    reader = {
      width: keys.length,
      read(values, at = 0) {
        const row: Record<string, unknown> = {};
        for (let i = 0; i < keys.length; i++) {
          const value = values[at + i];
          row[keys[i]!] = value === null || value === undefined ? null : columns[i]!.mapFromDriverValue(value);
        }
        return row;
      },
    };
    readers.set(table, reader);
  }
  return reader as RowReader<T["$inferSelect"]>;
}

/** A statement whose rows come back as the driver's value arrays, in the order of its select list. */
export interface ValuesStatement {
  execute(values?: Record<string, unknown>): Promise<unknown[][]>;
}

const asIs = (rows: unknown[][]): unknown[][] => rows;

/**
 * `query` (text and parameters, `sql.placeholder`s filled at each run) on `db`, answering value
 * arrays (Drizzle's array mode, its row mapping left out). Named, postgres.js keeps it prepared
 * on each connection; unnamed, it is sent as Drizzle sends a query it was not asked to prepare.
 */
export function valuesStatement(db: Executor, query: Query, name: string | undefined): ValuesStatement {
  return db._.session.prepareQuery(query, undefined, name, true, asIs as never) as unknown as ValuesStatement;
}
