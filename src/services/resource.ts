import { create, type DescField, type DescMessage, type DescMethod, type DescService, type MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { getTableColumns } from "drizzle-orm";
import type { PgColumn, PgTable } from "drizzle-orm/pg-core";
import { columnKey, newChildUid, type Executor, type GroupContent } from "../db/index.js";
import { standardMethodOf } from "../descriptors/index.js";
import { isForeignKeyViolation } from "../errors/index.js";
import { listVisibilityKey, type ExtraFilters, type ListParams, type ListSource } from "../list/index.js";
import type { ServiceContext } from "./context.js";
import { ResourceStore, requireField, type BeforeDelete, type ResourceMapping } from "./resource-store.js";

/**
 * Everything the shared machinery needs to know about one resource
 * (docs/design.md, "Resources"): its table and message mapping, how the List
 * engine reads it, and whether a group holding it may be deleted. From this,
 * `resourceService` derives the List/Get/Create/Update/Delete handlers; a
 * service file writes only the handlers particular to its resource.
 */
export interface ResourceDefinition<T extends PgTable, Desc extends DescMessage> extends ResourceMapping<T, Desc> {
  /** How the List engine reads the table. */
  list: ListSource<T>;
  /** Filters of the List request beyond scope and name (validated; throw INVALID_ARGUMENT). */
  listFilters?: (req: never) => ExtraFilters;
  /** The uid of a new row in `parent` (default: a fresh child uid under the parent's path). */
  newUid?: (parent: string) => string;
  /** Runs inside the delete's transaction, after the row lock: checks and dependent rows. */
  beforeDelete?: BeforeDelete<T>;
  /** The error for a delete that a foreign key refused (rows referencing it appeared meanwhile). */
  stillReferenced?: (uid: string) => unknown;
  /** Rows live in a group, and a group holding any cannot be deleted (ResourceCatalog). */
  groupContent?: GroupContent | undefined;
}

/** What a definition states; the List engine's view defaults from the table's columns. */
export type ResourceInput<T extends PgTable, Desc extends DescMessage> = Omit<
  ResourceDefinition<T, Desc>,
  "list" | "uid" | "eventGroup" | "groupContent"
> & {
  uid?: PgColumn;
  /** The group a row's events belong to: by default the row itself for groups, else its parent (null for global rows). */
  eventGroup?: (row: T["$inferSelect"]) => string | null;
  list?: Partial<ListSource<T>>;
  /**
   * Rows live in a group, and a group holding any cannot be deleted: the plural
   * noun its refusal names ("repos"). Omit for rows that go with their group
   * (role bindings) or live in no group.
   */
  groupContent?: string;
};

export function defineResource<T extends PgTable, Desc extends DescMessage>(input: ResourceInput<T, Desc>): ResourceDefinition<T, Desc> {
  const columns = getTableColumns(input.table) as Record<string, PgColumn | undefined>;
  const uid = input.uid ?? columns["uid"];
  if (!uid) throw new Error(`${input.kind}: its table has no uid column`);
  const sortable: ListSource<T>["sortable"] = {};
  if (columns["name"]) sortable.name = columns["name"];
  if (columns["createTime"]) sortable.create_time = columns["createTime"];
  if (columns["updateTime"]) sortable.update_time = columns["updateTime"];
  const list: ListSource<T> = {
    table: input.table,
    uid,
    parentUid: columns["parentUid"],
    isGroup: false,
    name: columns["name"],
    sortable,
    ...input.list,
  };
  const { groupContent, ...rest } = input;
  const uidKey = columnKey(input.table, uid);
  const parentKey = list.parentUid ? columnKey(input.table, list.parentUid) : undefined;
  const eventGroup =
    input.eventGroup ??
    ((row: T["$inferSelect"]) => {
      const r = row as Record<string, unknown>;
      if (list.isGroup) return String(r[uidKey]);
      return parentKey ? ((r[parentKey] as string | null) ?? null) : null;
    });
  if (groupContent && !list.parentUid) throw new Error(`${input.kind}: a group content needs a parentUid column`);
  const content = groupContent && list.parentUid ? { label: groupContent, table: input.table, parentUid: list.parentUid } : undefined;
  return { ...rest, uid, list, eventGroup, groupContent: content };
}

type Handler = (req: never, context: HandlerContext) => Promise<unknown>;

/** The request or response field holding the resource's message (`group` in CreateGroupRequest), if any. */
function resourceField(message: DescMessage, schema: DescMessage, repeated: boolean): DescField | undefined {
  return message.fields.find(
    (f) => (repeated ? f.fieldKind === "list" && f.listKind === "message" : f.fieldKind === "message") && f.message === schema,
  );
}

/**
 * The service's implementation: `custom` handlers as written, every other
 * method derived from the definition by its shape (the standard method it
 * is, src/descriptors/standard-method.ts, over the resource's message). A method that is neither
 * fails at start, not at the first call.
 */
export function resourceService<S extends DescService, T extends PgTable, Desc extends DescMessage>(
  service: S,
  def: ResourceDefinition<T, Desc>,
  ctx: ServiceContext,
  custom: Partial<ServiceImpl<S>> | ((store: ResourceStore<T, Desc>) => Partial<ServiceImpl<S>>) = {},
): ServiceImpl<S> {
  ctx.resources.add(def);
  const store = new ResourceStore(ctx.db, ctx.clock, def, ctx.events, () => ctx.resources.groupContents());
  const written = typeof custom === "function" ? custom(store) : custom;
  const decorate = def.decorate ?? (async (_db: Executor, page: MessageShape<Desc>[]) => page);
  const impl: Record<string, unknown> = { ...written };
  for (const method of service.methods) {
    if (impl[method.localName]) continue;
    const handler = derive(method);
    if (!handler) throw new Error(`${service.typeName}.${method.name} is neither written nor derivable from the ${def.kind} resource`);
    impl[method.localName] = handler;
  }
  return impl as ServiceImpl<S>;

  function derive(method: DescMethod): Handler | undefined {
    const field = (name: string) => method.input.fields.find((f) => f.name === name);
    switch (standardMethodOf(method)) {
      case "List": {
        const out = resourceField(method.output, def.schema, true);
        if (!out) return undefined;
        const filters = def.listFilters as ((req: unknown) => ExtraFilters) | undefined;
        return async (req: never, context) => {
          const page = await ctx.list.list(ctx.db, def.list, req as ListParams, context.values.get(listVisibilityKey), filters?.(req));
          const messages = await decorate(ctx.db, page.rows.map(def.toMessage));
          return create(method.output, { ...page, [out.localName]: messages } as never);
        };
      }
      case "Get":
        if (method.output !== def.schema || !field("uid")) return undefined;
        return async (req: { uid: string }) => store.get(req.uid);
      case "Create": {
        const body = resourceField(method.input, def.schema, false);
        if (method.output !== def.schema || !body || !field("parent")) return undefined;
        const newUid = def.newUid ?? newChildUid;
        return (req: Record<string, unknown>, context) => {
          const parent = requireField(req["parent"] as string, "parent");
          const message = (req[body.localName] as MessageShape<Desc> | undefined) ?? create(def.schema);
          // A new row holds nothing yet: no decoration.
          return store.create(message, { uid: newUid(parent), parentUid: parent } as Partial<T["$inferInsert"]>, context);
        };
      }
      case "Update": {
        const body = resourceField(method.input, def.schema, false);
        if (method.output !== def.schema || !body || !field("update_mask")) return undefined;
        return async (req: Record<string, unknown>, context) => {
          const message = (req[body.localName] as MessageShape<Desc> | undefined) ?? create(def.schema);
          const uid = requireField((message as { uid?: string }).uid ?? "", `${body.name}.uid`);
          return store.update(uid, message, req["updateMask"] as never, context);
        };
      }
      case "Delete":
        if (!field("uid")) return undefined;
        return async (req: { uid: string }, context) => {
          try {
            await store.delete(req.uid, context, def.beforeDelete);
          } catch (e) {
            throw def.stillReferenced && isForeignKeyViolation(e) ? def.stillReferenced(req.uid) : e;
          }
          return create(method.output);
        };
      default:
        return undefined;
    }
  }
}
