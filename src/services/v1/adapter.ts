import {
  create,
  toJsonString,
  type DescMessage,
  type DescMethod,
  type DescService,
  type MessageInitShape,
  type MessageShape,
} from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { standardMethodOf } from "../../descriptors/index.js";
import type { ServiceContext } from "../context.js";
import { inProcess, type InProcess } from "./in-process.js";
import { listAll, type V1ListFilter, type V2Page } from "./list-all.js";
import { REPLACE_ALL, withV1Fields } from "./shape.js";

// One v1 service as a row of the table (docs/design.md, "v1 beside v2"):
// what it calls in v2 and how its resource's shape differs. `v1Impl` turns
// any row into the service's implementation.

/**
 * A v1 service over its v2beta1 twin. Each v1 method calls the v2 method of
 * the same name in-process; what it does is decided by the standard method it
 * is (List, Create, Update, Delete: src/descriptors/standard-method.ts).
 */
export interface V1Row<V2 extends DescService, D1 extends DescMessage, R2> {
  /** The v1 service descriptor. */
  v1: DescService;
  /** The v1 resource message. */
  schema: D1;
  /** The v2beta1 service called in-process, and how to build its implementation. */
  v2: V2;
  v2Impl: (ctx: ServiceContext) => ServiceImpl<V2>;
  /** The Create/Update request field holding the resource: the same name in v1 and v2. */
  field: string;
  /** The v2 List response field of the results (v1 names it `items`). */
  v2Items: string;
  /** The v1 List request fields, beyond `id` and `uidp`, passed to the v2 List as they are. */
  listFilters: readonly string[];
  /** A v2 resource in the v1 shape. */
  toV1: (r: R2) => MessageInitShape<D1>;
  /** A v1 resource as the v2 resource of a Create or Update (its output-only fields dropped). */
  toV2: (r: MessageShape<D1>) => object;
  /** The v2 Create request, when it is not `{parent, [field]: toV2(resource)}`. */
  createRequest?: (r: MessageShape<D1>, req: { parent: string }) => object;
  /** Checks before an Update, for what v1 promises but the v2 update does not check. */
  beforeUpdate?: (r: MessageShape<D1>, v2: InProcess<V2>, context: HandlerContext) => Promise<void>;
  /** v2 request field names as v1 names them in a Create's or Update's INVALID_ARGUMENT. */
  errorFields?: Record<string, string>;
}

/** A row with its types erased, as the table holds it. */
export type AnyV1Row = V1Row<DescService, DescMessage, unknown>;

/**
 * Declares a row, type-checking its functions against its own messages. The
 * erasure is safe: `v1Impl` hands each function only what the same row's
 * descriptors produce.
 */
export function v1Row<V2 extends DescService, D1 extends DescMessage, R2>(row: V1Row<V2, D1, R2>): AnyV1Row {
  return row as unknown as AnyV1Row;
}

type Call = (init: object, context: HandlerContext) => Promise<Record<string, unknown>>;
type Request = Record<string, unknown>;
type Handler = (req: Request, context: HandlerContext) => Promise<unknown>;

const VERBS = {
  List: (row, call): Handler => {
    const toV1 = (r: unknown) => create(row.schema, row.toV1(r));
    // What an item adds to the answer: its JSON, the larger of the two encodings.
    const size = (item: MessageShape<DescMessage>) => Buffer.byteLength(toJsonString(row.schema, item));
    return (req, context) =>
      listAll(
        req as unknown as V1ListFilter,
        (page) => call({ ...page, ...Object.fromEntries(row.listFilters.map((f) => [f, req[f]])) }, context) as Promise<V2Page & Request>,
        (res) => (res[row.v2Items] as unknown[]).map(toV1),
        size,
      );
  },

  Create: (row, call) => async (req, context) => {
    const r = (req[row.field] as MessageShape<DescMessage> | undefined) ?? create(row.schema);
    const v2Req = row.createRequest ? row.createRequest(r, req as { parent: string }) : { parent: req["parent"], [row.field]: row.toV2(r) };
    return create(row.schema, row.toV1(await v1Errors(row, call(v2Req, context))));
  },

  // A v1 update replaces the whole resource (REPLACE_ALL).
  Update: (row, call, v2) => async (req, context) => {
    const r = (req[row.field] as MessageShape<DescMessage> | undefined) ?? create(row.schema);
    await row.beforeUpdate?.(r, v2, context);
    const update = call({ [row.field]: row.toV2(r), updateMask: REPLACE_ALL }, context);
    return create(row.schema, row.toV1(await v1Errors(row, update)));
  },

  Delete: (_row, call) => (req, context) => call({ uid: req["id"] }, context),
} satisfies Record<string, (row: AnyV1Row, call: Call, v2: InProcess<DescService>) => Handler>;

// Only rows that rename fields rewrite errors: the rewrite rebuilds the error.
const v1Errors = <T>(row: AnyV1Row, call: Promise<T>): Promise<T> => (row.errorFields ? withV1Fields(call, row.errorFields) : call);

function verbOf(row: AnyV1Row, method: DescMethod): keyof typeof VERBS {
  const verb = standardMethodOf(method);
  if (verb === undefined || !Object.hasOwn(VERBS, verb))
    throw new Error(`${row.v1.typeName}.${method.name}: a v1 method must be a List, Create, Update or Delete`);
  return verb as keyof typeof VERBS;
}

/** The v1 service of a row: each method adapts the same-named v2 method, called with the caller's context. */
export function v1Impl(row: AnyV1Row, ctx: ServiceContext): ServiceImpl<DescService> {
  const v2 = inProcess(row.v2, row.v2Impl(ctx));
  const calls = v2 as unknown as Record<string, Call | undefined>;
  const impl: Record<string, Handler> = {};
  for (const method of row.v1.methods) {
    const verb = verbOf(row, method);
    const call = calls[method.localName];
    if (!call) throw new Error(`${row.v1.typeName}.${method.name}: ${row.v2.typeName} has no ${method.name} to call`);
    impl[method.localName] = VERBS[verb](row, call, v2);
  }
  return impl as ServiceImpl<DescService>;
}
