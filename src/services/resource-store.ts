import { clone, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { eq, getTableName, sql } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import {
  columnKey,
  knownRow,
  lockedInsertPart,
  rowReader,
  valuesStatement,
  type Database,
  type Executor,
  type GroupContent,
  type RowReader,
  type Transaction,
  type ValuesStatement,
} from "../db/index.js";
import { alreadyExists, invalidArgument, isForeignKeyViolation, isUniqueViolation, notFound } from "../errors/index.js";
import { declaredEventType } from "../descriptors/index.js";
import type { ChangeCall, EventRecorder } from "../events/index.js";
import { applyUpdate } from "../fieldmask/index.js";
import { eventGroupOf, uidColumnOf, type BeforeDelete, type Resource, type ResourceDeps } from "./resource-definition.js";

export type { BeforeDelete } from "./resource-definition.js";

/** What a store works with: the database, the clock, where events go, and what the resource's hooks may use. */
export interface StoreContext extends ResourceDeps {
  db: Database;
  clock: () => Date;
  events: EventRecorder;
  /** What a group may hold that keeps it from being deleted: every resource the server serves (ResourceCatalog). */
  resources?: { groupContents(): readonly GroupContent[] };
}

export function requireField(value: string, field: string): string {
  if (!value) throw invalidArgument(field, "is required");
  return value;
}

/**
 * The shared Get/Create/Update/Delete machinery behind every resource
 * service: row locking, update masks, and the mapping of constraint
 * violations to typed errors.
 */
export class ResourceStore<T extends PgTable, Desc extends DescMessage> {
  private readonly hasCreateTime: boolean;
  private readonly hasUpdateTime: boolean;
  private readonly db: Database;
  private readonly clock: () => Date;
  private readonly events: EventRecorder;
  /** What the resource's hooks are handed. */
  private readonly deps: ResourceDeps;
  private readonly uid: PgColumn;
  /** The row property holding the uid (the subject of the row's events). */
  private readonly uidKey: string;
  private readonly eventGroup: (row: T["$inferSelect"]) => string | null;
  /** Get by uid, the hottest statement: its SQL is built once, not per request. */
  private readonly getByUid: ValuesStatement;
  private readonly rows: RowReader<T["$inferSelect"]>;

  constructor(
    readonly resource: Resource<T, Desc>,
    private readonly ctx: StoreContext,
  ) {
    this.db = ctx.db;
    this.clock = ctx.clock;
    this.events = ctx.events;
    this.deps = { secrets: ctx.secrets, egress: ctx.egress };
    // Tables name their timestamps createTime/updateTime; the store keeps them.
    this.hasCreateTime = "createTime" in resource.table;
    this.hasUpdateTime = "updateTime" in resource.table;
    this.uid = uidColumnOf(resource);
    this.uidKey = columnKey(resource.table, this.uid);
    this.eventGroup = eventGroupOf(resource);
    this.rows = rowReader(resource.table);
    const byUid = this.db
      .select()
      .from(resource.table as PgTable)
      .where(eq(this.uid, sql.placeholder("uid")))
      .toSQL();
    this.getByUid = valuesStatement(this.db, byUid, `get_${getTableName(resource.table)}`);
  }

  /** A row as its message (undecorated), its hooks handed the store's dependencies. */
  toMessage(row: T["$inferSelect"]): MessageShape<Desc> {
    return this.resource.toMessage(row, this.deps);
  }

  /** Checks a message as a write would (INVALID_ARGUMENT): for a handler that must refuse a bad request before anything else. */
  validate(message: MessageShape<Desc>): void {
    this.resource.validate(message, this.deps);
  }

  private toColumns(message: MessageShape<Desc>): Partial<T["$inferInsert"]> {
    return this.resource.toColumns(message, this.deps);
  }

  private stamps(creating: boolean): Record<string, Date> {
    const now = this.clock();
    const out: Record<string, Date> = {};
    if (creating && this.hasCreateTime) out["createTime"] = now;
    if (this.hasUpdateTime) out["updateTime"] = now;
    return out;
  }

  /** The row, or NOT_FOUND. `lock` takes a row lock inside a transaction. */
  async row(db: Executor, uid: string, lock = false): Promise<T["$inferSelect"]> {
    const m = this.resource;
    const query = db
      .select()
      .from(m.table as PgTable)
      .where(eq(this.uid, uid));
    const [row] = await (lock ? query.for("update") : query);
    if (!row) throw notFound(m.kind, uid);
    return row as T["$inferSelect"];
  }

  /** The resource as the API answers it: decorated (`resource.decorate`). */
  async get(uid: string, field = "uid"): Promise<MessageShape<Desc>> {
    const [values] = await this.getByUid.execute({ uid: requireField(uid, field) });
    if (!values) throw notFound(this.resource.kind, uid);
    return this.decorated(this.db, this.toMessage(this.rows.read(values)));
  }

  /**
   * Validates and inserts; `extra` supplies uid, parent and output-only columns.
   * The insert and its event share `tx`, or a transaction of their own.
   */
  async create(
    message: MessageShape<Desc>,
    extra: Partial<T["$inferInsert"]>,
    call: ChangeCall,
    tx?: Transaction,
  ): Promise<MessageShape<Desc>> {
    const m = this.resource;
    this.validate(message);
    const values = { ...this.toColumns(message), ...this.stamps(true), ...extra } as T["$inferInsert"];
    // On its own, with a row known before it is written: the row and its event in one statement,
    // no transaction, no read-back (docs/design.md, "Writes"). A reference found missing there
    // writes nothing, and the ordinary path below reports it (or, should it have appeared meanwhile,
    // makes the row).
    const known = tx || m.decorate ? undefined : knownRow(m.table, values as Record<string, unknown>);
    if (known) {
      const created = this.toMessage(known as T["$inferSelect"]);
      const subject = String(known[this.uidKey]);
      const change = { schema: m.schema, subject, group: this.eventGroup(known as T["$inferSelect"]), after: created };
      try {
        if (await this.events.changeWith(this.db, call, change, lockedInsertPart(m.table, known, this.uid))) return created;
      } catch (e) {
        throw this.constraintError(e, message, values);
      }
    }
    const insert = async (tx: Transaction) => {
      const [row] = (await tx.insert(m.table).values(values).returning()) as T["$inferSelect"][];
      const created = this.toMessage(row!);
      await this.recordChange(tx, call, row!, undefined, await this.eventMessage(tx, call, created));
      return created;
    };
    try {
      return await (tx ? insert(tx) : this.db.transaction(insert));
    } catch (e) {
      throw this.constraintError(e, message, values);
    }
  }

  /**
   * Applies an update (docs/design.md, "Writes") under a row lock and answers the updated
   * resource decorated: the current message,
   * patched by `patch` and `mask`, validated, written back with `extra`
   * (which also sees the message before the change, for rules about what changed).
   * Runs in `tx` when given (a change made with others, as create does), else in its own transaction.
   */
  async update(
    uid: string,
    patch: MessageShape<Desc>,
    mask: FieldMask | undefined,
    call: ChangeCall,
    extra: (
      tx: Transaction,
      next: MessageShape<Desc>,
      current: MessageShape<Desc>,
    ) => Partial<T["$inferInsert"]> | Promise<Partial<T["$inferInsert"]>> = () => ({}),
    tx?: Transaction,
  ): Promise<MessageShape<Desc>> {
    const m = this.resource;
    let next: MessageShape<Desc> | undefined;
    const change = async (tx: Transaction) => {
      const current = this.toMessage(await this.row(tx, uid, true));
      const before = await this.eventMessage(tx, call, current);
      next = applyUpdate(m.schema, current, patch, mask);
      this.validate(next);
      const values = { ...this.toColumns(next), ...this.stamps(false), ...(await extra(tx, next, current)) };
      const [row] = (await tx.update(m.table).set(values).where(eq(this.uid, uid)).returning()) as T["$inferSelect"][];
      const updated = this.toMessage(row!);
      const after = await this.eventMessage(tx, call, updated);
      await this.recordChange(tx, call, row!, before, after);
      // The answer is decorated like a Get's: the event's message when there is one (decorated
      // once, in the change's transaction), else decorated here.
      return after ?? (await this.decorated(tx, updated));
    };
    try {
      return await (tx ? change(tx) : this.db.transaction(change));
    } catch (e) {
      throw this.constraintError(e, next ?? patch, {});
    }
  }

  /**
   * Deletes under a row lock; `before` runs in the same transaction (checks, dependent rows):
   * `tx` when given, else one of its own.
   */
  async delete(uid: string, call: ChangeCall, before: BeforeDelete<T> = async () => {}, tx?: Transaction): Promise<void> {
    const m = this.resource;
    const remove = async (tx: Transaction) => {
      const row = await this.row(tx, requireField(uid, "uid"), true);
      await before(tx, row, { call, events: this.events, groupContents: this.ctx.resources?.groupContents() ?? [] });
      // Decorated while the row (and what it references) is still there.
      const gone = await this.eventMessage(tx, call, this.toMessage(row));
      await tx.delete(m.table).where(eq(this.uid, uid));
      await this.recordChange(tx, call, row, gone, undefined);
    };
    await (tx ? remove(tx) : this.db.transaction(remove));
  }

  /** The resource as an event shows it (decorated like an answer), or nothing when `call` records no event. */
  private async decorated(db: Executor, message: MessageShape<Desc>): Promise<MessageShape<Desc>> {
    const decorate = this.resource.decorate;
    return decorate ? (await decorate(db, [message]))[0]! : message;
  }

  private async eventMessage(tx: Transaction, call: ChangeCall, message: MessageShape<Desc>): Promise<MessageShape<Desc> | undefined> {
    if (!declaredEventType(call.method)) return undefined;
    const decorate = this.resource.decorate;
    // A copy: decoration may fill the message in place, and the caller's is its answer.
    return decorate ? (await decorate(tx, [clone(this.resource.schema, message)]))[0] : message;
  }

  /** Records the event of a change in its transaction (docs/design.md, "Events"). */
  recordChange(
    tx: Transaction,
    call: ChangeCall,
    row: T["$inferSelect"],
    before: MessageShape<Desc> | undefined,
    after: MessageShape<Desc> | undefined,
  ): Promise<void> {
    const m = this.resource;
    const subject = String((row as Record<string, unknown>)[this.uidKey]);
    return this.events.change(tx, call, { schema: m.schema, subject, group: this.eventGroup(row), before, after });
  }

  private constraintError(e: unknown, message: MessageShape<Desc>, values: object): unknown {
    const m = this.resource;
    if (isUniqueViolation(e)) {
      return alreadyExists(
        m.kind,
        String((values as { name?: unknown }).name ?? ""),
        m.duplicate?.(message) ?? `such a ${m.kind} already exists`,
      );
    }
    // Only the resource's own row: a violation elsewhere in the transaction (an event's
    // delivery, say) is not a missing parent.
    if (m.missingReference && isForeignKeyViolation(e, getTableName(m.table))) {
      return notFound(m.missingReference, String((values as { parentUid?: unknown }).parentUid ?? ""));
    }
    return e;
  }
}
