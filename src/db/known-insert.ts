import { getTableColumns, getTableName, is, SQL, sql } from "drizzle-orm";
import { getTableConfig, type PgColumn, type PgTable } from "drizzle-orm/pg-core";
import type { CompiledStatement } from "./compiled.js";

// A create whose row is known before it is written can be one statement with its event
// (docs/design.md, "Writes"). These are the two pieces of that statement the table decides:
// the row itself, and an INSERT that writes it only once every row it references is locked.

interface Reference {
  /** The row property holding the reference. */
  key: string;
  table: PgTable;
  column: PgColumn;
}

/** A column as a known insert sees it, read once per table. */
interface ColumnShape {
  /** The row property. */
  key: string;
  column: PgColumn;
  /** The database would compute its value when none is given (a default function or SQL, a serial, identity or generated column). */
  computed: boolean;
  jsonb: boolean;
}

/** What a table's known inserts need of it, read once per table. */
interface TableShape {
  name: string;
  columns: ColumnShape[];
  references: Reference[];
  /** A reference spans several columns: no known insert for this table. */
  compound: boolean;
}

const shapes = new WeakMap<PgTable, TableShape>();

function shapeOf(table: PgTable): TableShape {
  let shape = shapes.get(table);
  if (!shape) {
    const columns = Object.entries(getTableColumns(table)).map(
      ([key, column]): ColumnShape => ({
        key,
        column,
        computed:
          !!(column.defaultFn || column.onUpdateFn || is(column.default, SQL) || column.generated || column.generatedIdentity) ||
          (column.hasDefault && column.default === undefined),
        jsonb: column.getSQLType() === "jsonb",
      }),
    );
    const keyOf = new Map(columns.map(({ key, column }) => [column, key]));
    const fks = getTableConfig(table).foreignKeys.map((fk) => fk.reference());
    shape = {
      name: getTableName(table),
      columns,
      compound: fks.some((ref) => ref.columns.length !== 1),
      references: fks.map((ref) => ({ key: keyOf.get(ref.columns[0]!)!, table: ref.foreignTable, column: ref.foreignColumns[0]! })),
    };
    shapes.set(table, shape);
  }
  return shape;
}

/**
 * The row an insert of `values` makes, when the values and the table's constant defaults say it
 * all; undefined when the database would compute any part of it (a default function or SQL
 * expression, a serial, identity or generated column, an SQL value) or when a reference spans
 * several columns. A `jsonb` value takes `jsonb`'s key order, so the row reads as it will read back.
 */
export function knownRow(table: PgTable, values: Record<string, unknown>): Record<string, unknown> | undefined {
  const shape = shapeOf(table);
  if (shape.compound) return undefined;
  const row: Record<string, unknown> = {};
  for (const { key, column, computed, jsonb } of shape.columns) {
    const given = values[key];
    let value: unknown;
    if (given !== undefined) {
      if (is(given, SQL)) return undefined;
      value = given;
    } else if (computed) {
      return undefined;
    } else {
      // A copy: a default object is shared by every insert.
      value = column.hasDefault ? structuredClone(column.default) : null;
    }
    row[key] = jsonb ? inJsonbOrder(value) : value;
  }
  return row;
}

/**
 * `INSERT INTO table … SELECT <row> FROM <each referenced row, locked FOR KEY SHARE> RETURNING
 * <returning>`, as `WITH` parts ending in one named `w`. A referenced row that is missing makes
 * the insert write nothing, so the statement's other parts, reading `w`, write nothing either; its
 * caller then takes the ordinary path, which reports the missing reference. Locked first, a present
 * reference cannot vanish before the statement's foreign-key checks run at its end, so a statement
 * that wrote its row is never refused after its event took a sequence number.
 */
export function lockedInsertPart(table: PgTable, row: Record<string, unknown>, returning: PgColumn): CompiledStatement {
  const shape = shapeOf(table);
  const present = shape.references.filter((ref) => row[ref.key] !== null && row[ref.key] !== undefined);
  const values: Record<string, unknown> = {};
  // Encoded here, not by the placeholders: Drizzle would hand a null to the encoder.
  for (const { key, column } of shape.columns) values[`c_${key}`] = row[key] === null ? null : column.mapToDriverValue(row[key]);
  const build = (): SQL => {
    const locks = present.map(
      (ref, i) =>
        sql`${sql.identifier(`k${i}`)} AS (SELECT 1 FROM ${ref.table} WHERE ${ref.column} = ${sql.placeholder(`c_${ref.key}`)} FOR KEY SHARE)`,
    );
    const names = sql.join(
      shape.columns.map(({ column }) => sql.identifier(column.name)),
      sql`, `,
    );
    // Every column: a known row has no generated or identity column (knownRow).
    const rowValues = sql.join(
      shape.columns.map(({ key }) => sql.placeholder(`c_${key}`)),
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
  };
  // The shape: the table, and which of its references are set (a root group has no parent).
  return { key: `${shape.name}(${present.map((ref) => ref.key).join(",")})`, build, values };
}

/** `value` with every object's keys in `jsonb`'s order: shorter keys first, then by their UTF-8 bytes. */
function inJsonbOrder(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inJsonbOrder);
  if (value === null || typeof value !== "object" || value instanceof Date) return value;
  const keys = Object.keys(value).sort((a, b) => {
    const [x, y] = [Buffer.from(a), Buffer.from(b)];
    return x.length - y.length || Buffer.compare(x, y);
  });
  // fromEntries defines each key as its own property: an assignment would drop "__proto__".
  return Object.fromEntries(keys.map((k) => [k, inJsonbOrder((value as Record<string, unknown>)[k])]));
}
