import { create, type DescMethodUnary, type DescService, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";

/** A unary RPC called in-process: any init shape in, a full message out. */
type InProcessMethod<M> =
  M extends DescMethodUnary<infer I, infer O> ? (init: MessageInitShape<I>, context: HandlerContext) => Promise<MessageShape<O>> : never;

export type InProcess<S extends DescService> = { [P in keyof S["method"]]: InProcessMethod<S["method"][P]> };

/**
 * Wraps a service implementation so that another service can call it
 * directly: the v1 adapters reach the v2 implementations this way, with the
 * caller's own HandlerContext (its principal and list visibility), so there
 * is one store and one behaviour. Authorization already ran for the v1 RPC,
 * which declares the same capability as its v2 twin.
 */
export function inProcess<S extends DescService>(service: S, impl: ServiceImpl<S>): InProcess<S> {
  const out: Record<string, unknown> = {};
  const methods = impl as unknown as Record<string, (req: unknown, context: HandlerContext) => unknown>;
  for (const method of service.methods) {
    if (method.methodKind !== "unary") continue;
    const fn = methods[method.localName]!;
    out[method.localName] = async (init: MessageInitShape<typeof method.input>, context: HandlerContext) =>
      create(method.output, (await fn(create(method.input, init), context)) as MessageInitShape<typeof method.output>);
  }
  return out as InProcess<S>;
}
