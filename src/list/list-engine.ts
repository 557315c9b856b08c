import { randomBytes } from "node:crypto";
import { and, asc, desc, eq, getTableColumns, getTableName, gt, lt, sql, type SQL } from "drizzle-orm";
import type { PgColumn, PgTable, SelectedFields } from "drizzle-orm/pg-core";
import type { SecretBox } from "../crypto/index.js";
import type { Database, Executor } from "../db/index.js";
import { columnKey, loadSealedSetting, rowReader, valuesStatement, type ValuesStatement } from "../db/index.js";
import { invalidArgument, permissionDenied } from "../errors/index.js";
import { parseOrderBy, type OrderBy } from "./order-by.js";
import { PAGE_TOKEN_LIFETIME_MS, PageTokenCodec, fingerprint, type CursorPosition } from "./page-token.js";
import { scopeConditions, type Bind, type UidpFilter } from "./scope.js";
import { visibilityCondition, visibilityShape, type ListVisibility } from "./visibility.js";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

/** A table the engine can list: its uid, its holder, and its sortable columns. */
export interface ListSource<T extends PgTable> {
  table: T;
  uid: PgColumn;
  /** The group holding each row; omit for global resources (advisories, built-ins). */
  parentUid?: PgColumn;
  /** Prefix-matched by descendants_of / in_root when the uid is not itself a path. */
  path?: PgColumn;
  isGroup: boolean;
  /** Sortable columns besides uid, by canonical name (name, create_time, update_time; an event's time). */
  sortable: Partial<Record<"name" | "create_time" | "update_time" | "time", PgColumn>>;
  /** Exact-match `name` filter column, when the resource has one. */
  name?: PgColumn;
  /** Rows without a parent (built-in roles) are visible to every caller. */
  globalRowsVisible?: boolean;
}

/** The paging fields every List request shares. */
export interface ListParams {
  uidp?: UidpFilter | undefined;
  name?: string;
  pageSize: number;
  pageToken: string;
  orderBy: string;
  skip: number;
}

/** Resource-specific conditions (already validated) and how to fingerprint them. */
export interface ExtraFilters {
  where: SQL[];
  /** A JSON-able description of the extra filters; a token is bound to it. */
  key: unknown;
}

export interface ListPage<Row> {
  rows: Row[];
  nextPageToken: string;
  totalCount: bigint;
  skipped: number;
}

const TOKEN_KEY_SETTING = "list.page_token_key";

/** A page's statement, built once per shape (ListEngine.statementFor): its rows' values, then the count if it counts. */
type PageStatement = ValuesStatement;

/** The select list's name for the count, after the table's columns. */
const COUNT_FIELD = "__total";

/** The statements of one source, by shape; a shape past this many is built per request. */
const MAX_SHAPES = 64;

/**
 * The one List engine (docs/design.md, "Lists"): scope and name filters, order_by with a
 * uid tiebreak, keyset cursors in signed tokens, skip, and an exact total
 * counted on the first page only.
 */
export class ListEngine {
  /**
   * Page statements on the engine's own database, per source, per shape: the SQL of a request is
   * built once for its shape, every value bound as a placeholder, the caller's roots included, so
   * one statement serves every caller (docs/design.md, "Lists"). A shape is made of what the code
   * offers (order, scope kinds, how many roots up to a few), never of how many values a request
   * sends, so the cache is bounded by the sources times MAX_SHAPES.
   */
  private readonly statements = new Map<object, Map<string, PageStatement>>();

  private constructor(
    private readonly db: Database,
    private readonly codec: PageTokenCodec,
    private readonly clock: () => Date,
  ) {}

  /** Loads the shared HMAC key (sealed at rest with `secrets`), creating it on first start. */
  static async create(db: Database, secrets: SecretBox, clock: () => Date): Promise<ListEngine> {
    const key = await loadSealedSetting(db, secrets, TOKEN_KEY_SETTING, () => randomBytes(32).toString("base64"));
    return new ListEngine(db, new PageTokenCodec(Buffer.from(key, "base64")), clock);
  }

  /**
   * One page. `visibility` is where the caller may look (worked out by the
   * authorization check from its grants); group-held resources are never
   * listed without it.
   */
  async list<T extends PgTable>(
    db: Executor,
    source: ListSource<T>,
    params: ListParams,
    visibility: ListVisibility | undefined,
    extra: ExtraFilters = { where: [], key: null },
  ): Promise<ListPage<T["$inferSelect"]>> {
    const pageSize = normalizePageSize(params.pageSize);
    if (params.skip < 0) throw invalidArgument("skip", "must not be negative");
    const order = parseOrderBy(params.orderBy, ["uid", ...Object.keys(source.sortable)]);
    const sortColumn = order.field === "uid" ? source.uid : source.sortable[order.field as keyof ListSource<T>["sortable"]];
    if (!sortColumn) throw invalidArgument("order_by", `cannot sort by ${order.field}`);

    // Every value of the request is a placeholder, named in the order the conditions take them.
    const values: Record<string, unknown> = { limit: pageSize + 1, offset: params.skip };
    const names: string[] = [];
    const bind: Bind = (name, value) => {
      values[name] = value;
      names.push(name);
      return sql.placeholder(name);
    };
    const where: SQL[] = [...scopeConditions(source, params.uidp, bind), ...extra.where];
    if (params.name && source.name) where.push(eq(source.name, bind("name", params.name)));
    let visible = "";
    if (source.parentUid) {
      if (!visibility) throw permissionDenied("this list has no authorization");
      visible = visibilityShape(visibility);
      const condition = visibilityCondition(source, visibility, bind);
      if (condition) where.push(condition);
    }
    // A token belongs to one list (the table is the resource, so the List method) and one query.
    const fp = fingerprint({
      list: getTableName(source.table),
      uidp: params.uidp ?? null,
      name: params.name ?? "",
      order,
      extra: extra.key,
      visibility: visibility ?? null,
    });

    const now = this.clock().getTime();
    let position: CursorPosition | undefined;
    let totalCount: bigint | undefined;
    if (params.pageToken) {
      const token = this.codec.decode(params.pageToken);
      if (token.fingerprint !== fp) {
        throw invalidArgument("page_token", "belongs to a different list, filter or order_by; start again without it");
      }
      // An expired token silently restarts from the first page (spec rule 4).
      if (now - token.issuedAt <= PAGE_TOKEN_LIFETIME_MS) {
        position = token.position;
        totalCount = token.totalCount;
      }
    }

    const filter = where.length ? and(...where) : undefined;
    const after = position ? afterPosition(source.uid, sortColumn, order, position, bind) : undefined;
    const counting = totalCount === undefined;
    const reader = rowReader(source.table);
    const build = (name: string | undefined): PageStatement => {
      const pageWhere = after ? and(filter, after) : filter;
      const direction = order.direction === "desc" ? desc : asc;
      const orderBy = sortColumn === source.uid ? [direction(source.uid)] : [direction(sortColumn), direction(source.uid)];
      // The first page and the exact count in one statement, one snapshot (docs/design.md, "Lists"):
      // the uncorrelated subquery runs once, as an InitPlan, not per row. The count follows the
      // table's columns, so each row's values are read straight into the row (src/db/table-rows.ts).
      const columns = getTableColumns(source.table as PgTable);
      const fields: SelectedFields = counting
        ? { ...columns, [COUNT_FIELD]: sql<unknown>`(select count(*) from ${source.table} where ${filter ?? sql`true`})` }
        : columns;
      const query = db
        .select(fields)
        .from(source.table as PgTable)
        .where(pageWhere)
        .orderBy(...orderBy)
        .limit(sql.placeholder("limit"))
        .offset(sql.placeholder("offset"))
        .toSQL();
      return valuesStatement(db, query, name);
    };
    // Extra filters carry their values in their SQL: such a list builds its statement each time.
    const statement =
      db === this.db && extra.where.length === 0
        ? this.statementFor(source, `${visible} ${shapeOf(params, order, counting, names)}`, build)
        : build(undefined);

    const found = await statement.execute(values);
    const rows = found.map((v) => reader.read(v));
    if (totalCount === undefined) {
      const first = found[0];
      if (first) totalCount = BigInt(first[reader.width] as string);
      // No row carries the count. At offset 0 on the first page the filter matches nothing;
      // past the end (skip) it still has to be counted.
      else totalCount = params.skip === 0 ? 0n : await countRows(db, source.table, filter, values);
    }

    let nextPageToken = "";
    if (rows.length > pageSize) {
      rows.length = pageSize;
      const last = rows[pageSize - 1] as Record<string, unknown>;
      nextPageToken = this.codec.encode({
        position: {
          value: sortColumn === source.uid ? null : cursorValue(last[columnKey(source.table, sortColumn)]),
          uid: String(last[columnKey(source.table, source.uid)]),
        },
        fingerprint: fp,
        issuedAt: now,
        totalCount,
      });
    }
    return { rows, nextPageToken, totalCount, skipped: params.skip };
  }

  /** The prepared statement of `shape`, built by `build` the first time. */
  private statementFor(source: object, shape: string, build: (name: string | undefined) => PageStatement): PageStatement {
    let byShape = this.statements.get(source);
    if (byShape === undefined) {
      byShape = new Map();
      this.statements.set(source, byShape);
    }
    let statement = byShape.get(shape);
    if (statement === undefined) {
      if (byShape.size >= MAX_SHAPES) return build(undefined);
      statement = build("list_page");
      byShape.set(shape, statement);
    }
    return statement;
  }
}

/**
 * What a page's SQL depends on beyond its source and visibility: the order, whether it counts,
 * which scope filters are set (ancestors_of an organization binds no value), and the names of
 * the values bound, which say which conditions there are and how many values each takes.
 */
function shapeOf(params: ListParams, order: OrderBy, counting: boolean, names: readonly string[]): string {
  const u = params.uidp;
  const scope = u ? `${+!!u.ancestorsOf}${+!!u.descendantsOf}${+!!u.childrenOf}${+!!u.inRoot}${+!!u.ids.length}` : "";
  return `${order.field} ${order.direction} ${counting ? "count" : ""} ${scope} ${names.join(",")}`;
}

async function countRows(db: Executor, table: PgTable, filter: SQL | undefined, values: Record<string, unknown>): Promise<bigint> {
  const [c] = await db.select({ n: sql<unknown>`count(*)` }).from(table).where(filter).execute(values);
  return BigInt((c?.n as string | undefined) ?? 0);
}

function normalizePageSize(size: number): number {
  if (size < 0) throw invalidArgument("page_size", "must not be negative");
  if (size === 0) return DEFAULT_PAGE_SIZE;
  return Math.min(size, MAX_PAGE_SIZE);
}

// Rows strictly after the cursor in (sort column, uid) order.
function afterPosition(uid: PgColumn, sortColumn: PgColumn, order: OrderBy, pos: CursorPosition, bind: Bind): SQL {
  const beyond = order.direction === "desc" ? lt : gt;
  if (sortColumn === uid || pos.value === null) return beyond(uid, bind("after.uid", pos.uid));
  const at = bind("after.value", pos.value);
  const value = sortColumn.dataType === "date" ? sql`${at}::timestamptz` : sql`${at}`;
  const op = order.direction === "desc" ? sql.raw("<") : sql.raw(">");
  return sql`(${sortColumn}, ${uid}) ${op} (${value}, ${bind("after.uid", pos.uid)})`;
}

function cursorValue(v: unknown): string {
  return v instanceof Date ? v.toISOString() : String(v);
}
