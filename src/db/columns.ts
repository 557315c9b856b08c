import { getTableColumns } from "drizzle-orm";
import { customType, timestamp, type PgColumn, type PgTable } from "drizzle-orm/pg-core";

// uids and names compare byte-wise on every back-end: `descendants_of` is a
// prefix range on uid (`>= 'p/' AND < 'p0'`), which only a C-collated btree
// index can serve, and keyset cursors need the same order as ORDER BY.
export const textC = customType<{ data: string; driverData: string }>({
  dataType: () => 'text COLLATE "C"',
});

/** The longest name a resource may have, in characters (checked by src/services/validation.ts). */
export const MAX_NAME_LENGTH = 200;

/** timestamptz with millisecond precision, as the API renders it. */
export const timestampMs = (name: string) => timestamp(name, { precision: 3, withTimezone: true, mode: "date" });

/** The row property (JS key) under which drizzle returns `column` of `table`. */
export function columnKey(table: PgTable, column: PgColumn): string {
  for (const [key, col] of Object.entries(getTableColumns(table))) if (col === column) return key;
  throw new Error(`column ${column.name} is not in its table`);
}
