import { create, type DescField, type DescMessage, type DescMethod, type DescService, type MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { PgTable } from "drizzle-orm/pg-core";
import { newChildUid, type Executor } from "../db/index.js";
import { standardMethodOf } from "../descriptors/index.js";
import { isForeignKeyViolation } from "../errors/index.js";
import { listVisibilityKey, type ExtraFilters, type ListParams } from "../list/index.js";
import { apiService, type ApiService } from "./api-service.js";
import type { ServiceContext } from "./context.js";
import { listSourceOf, type Resource } from "./resource-definition.js";
import { ResourceStore, requireField } from "./resource-store.js";

// A service over one resource: docs/design.md, "Resources".

export {
  defineResource,
  type AnyResource,
  type ExampleRefs,
  type Resource,
  type ResourceDeps,
} from "./resource-definition.js";

/** The handlers a service file writes: given the resource's store and the services' context. */
export type Written<S extends DescService, T extends PgTable, Desc extends DescMessage> =
  | Partial<ServiceImpl<S>>
  | ((store: ResourceStore<T, Desc>, ctx: ServiceContext) => Partial<ServiceImpl<S>>);

type Handler = (req: never, context: HandlerContext) => Promise<unknown>;

/** The request or response field holding the resource's message (`group` in CreateGroupRequest), if any. */
function resourceField(message: DescMessage, schema: DescMessage, repeated: boolean): DescField | undefined {
  return message.fields.find(
    (f) => (repeated ? f.fieldKind === "list" && f.listKind === "message" : f.fieldKind === "message") && f.message === schema,
  );
}

/**
 * The service over `resource`: `written` handlers as written, every other method derived from
 * the resource by its shape (the standard method it is, src/descriptors/standard-method.ts,
 * over the resource's message). A method that is neither fails when the implementation is
 * built, at start, not at the first call.
 */
export function resourceService<S extends DescService, T extends PgTable, Desc extends DescMessage>(
  service: S,
  resource: Resource<T, Desc>,
  written: Written<S, T, Desc> = {},
): ApiService<S> {
  return apiService(service, (ctx) => implementation(service, resource, ctx, written), resource);
}

function implementation<S extends DescService, T extends PgTable, Desc extends DescMessage>(
  service: S,
  def: Resource<T, Desc>,
  ctx: ServiceContext,
  custom: Written<S, T, Desc>,
): ServiceImpl<S> {
  const store = new ResourceStore(def, ctx);
  const list = listSourceOf(def);
  const written = typeof custom === "function" ? custom(store, ctx) : custom;
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
          const page = await ctx.list.list(ctx.db, list, req as ListParams, context.values.get(listVisibilityKey), filters?.(req));
          const messages = await decorate(
            ctx.db,
            page.rows.map((row) => store.toMessage(row)),
          );
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
