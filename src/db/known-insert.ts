import { getTableColumns, is, SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgColumn, type PgTable } from "drizzle-orm/pg-core";

// A create whose row is known before it is written can be one statement with its event
// (docs/design.md, "Writes"). These are the two pieces of that statement the table decides:
// the row itself, and an INSERT that writes it only once every row it references is locked.

/**
 * The row an insert of `values` makes, when the values and the table's constant defaults say it
 * all; undefined when the database would compute any part of it (a default function or SQL
 * expression, a serial, identity or generated column, an SQL value) or when a reference spans
 * several columns. A `jsonb` value takes `jsonb`'s key order, so the row reads as it will read back.
 */
export function knownRow(table: PgTable, values: Record<string, unknown>): Record<string, unknown> | undefined {
  if (getTableConfig(table).foreignKeys.some((fk) => fk.reference().columns.length !== 1)) return undefined;
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const given = values[key];
    let value: unknown;
    if (given !== undefined) {
      if (is(given, SQL)) return undefined;
      value = given;
    } else if (column.defaultFn || column.onUpdateFn || is(column.default, SQL) || column.generated || column.generatedIdentity) {
      return undefined;
    } else if (column.hasDefault && column.default === undefined) {
      return undefined;
    } else {
      // A copy: a default object is shared by every insert.
      value = column.hasDefault ? structuredClone(column.default) : null;
    }
    row[key] = column.getSQLType() === "jsonb" ? inJsonbOrder(value) : value;
  }
  return row;
}

/**
 * `INSERT INTO table … SELECT <row> FROM <each referenced row, locked FOR KEY SHARE> RETURNING
 * <returning>`, as a `WITH` part named `w` (preceded by the locks' own parts). A referenced row
 * that is missing makes the insert write nothing, so the statement's other parts, reading `w`,
 * write nothing either; its caller then takes the ordinary path, which reports the missing
 * reference. Locked first, a present reference cannot vanish before the statement's foreign-key
 * checks run at its end, so a statement that wrote its row is never refused after its event took
 * a sequence number.
 */
export function lockedInsertPart(table: PgTable, row: Record<string, unknown>, returning: PgColumn): SQL {
  const columns = getTableColumns(table);
  const keyOf = new Map(Object.entries(columns).map(([key, column]) => [column, key]));
  const locks: SQL[] = [];
  for (const fk of getTableConfig(table).foreignKeys) {
    const ref = fk.reference();
    const value = row[keyOf.get(ref.columns[0]!)!];
    if (value === null || value === undefined) continue;
    const target = ref.foreignColumns[0]!;
    locks.push(
      sql`${sql.identifier(`k${locks.length}`)} AS (SELECT 1 FROM ${ref.foreignTable} WHERE ${target} = ${sql.param(value, target)} FOR KEY SHARE)`,
    );
  }
  // Every column: a known row has no generated or identity column (knownRow).
  const insertable = Object.entries(columns);
  const names = sql.join(
    insertable.map(([, column]) => sql.identifier(column.name)),
    sql`, `,
  );
  const rowValues = sql.join(
    insertable.map(([key, column]) => sql.param(row[key], column)),
    sql`, `,
  );
  const from = locks.length
    ? sql` FROM ${sql.join(
        locks.map((_, i) => sql.identifier(`k${i}`)),
        sql`, `,
      )}`
    : sql``;
  const insert = sql`w AS (INSERT INTO ${table} (${names}) SELECT ${rowValues}${from} RETURNING ${sql.identifier(returning.name)})`;
  return locks.length ? sql`${sql.join(locks, sql`, `)}, ${insert}` : insert;
}

/** `value` with every object's keys in `jsonb`'s order: shorter keys first, then by their UTF-8 bytes. */
function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  const keys = Object.keys(value).sort((a, b) => {
    const [x, y] = [Buffer.from(a), Buffer.from(b)];
    return x.length - y.length || Buffer.compare(x, y);
  });
  const out: Record<string, unknown> = {};
  for (const k of keys) out[k] = inJsonbOrder((value as Record<string, unknown>)[k]);
  return out;
}
