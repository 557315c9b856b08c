import type http from "node:http";
import type { DescMessage, DescMethod, Message } from "@bufbuild/protobuf";
import type { ContextValues } from "@connectrpc/connect";
import type { MethodSerializationLookup, UniversalHandler } from "@connectrpc/connect/protocol";
import type { InvokeUnary, NodeRequest, NodeResponse } from "../../http/index.js";

/** What every server path of the RPC handler needs, resolved once in rpcHandler (dispatch.ts). */
export interface RpcPaths {
  /** Calls an API method behind the call pipeline with a decoded message (the direct paths); undefined: none. */
  invoke: InvokeUnary | undefined;
  /** The JSON text of an answer as REST renders it: the direct Connect JSON path writes it. */
  renderJson: ((schema: DescMessage, message: Message) => string) | undefined;
  contextValues: ((req: NodeRequest) => ContextValues) | undefined;
  /** connect-es's own serialization per method (its limits and errors), for the direct paths' decoding. */
  serializations: Map<DescMethod, MethodSerializationLookup<DescMessage, DescMessage>>;
  readMaxBytes: number;
  /** The router's maxTimeoutMs: a longer connect-timeout-ms is refused, as connect-es refuses it. */
  maxTimeoutMs: number;
  /** The call through connect-es's handler (via-connect.ts); `body` replaces the request stream (bytes already read). */
  viaConnect: (
    req: NodeRequest,
    res: NodeResponse,
    handler: UniversalHandler,
    contentType: string,
    body?: AsyncIterable<Uint8Array>,
  ) => void;
}

/** Node's request headers as fetch Headers, without HTTP/2 pseudo-headers (`:path`, …). */
export function webHeaders(node: http.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const name in node) {
    if (name.charCodeAt(0) === 0x3a) continue;
    const value = node[name];
    if (typeof value === "string") out.append(name, value);
    else if (value) for (const v of value) out.append(name, v);
  }
  return out;
}

export function nodeHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** A request header's value, several joined by commas; null when absent. */
export function headerValue(v: string | string[] | undefined): string | null {
  return v === undefined ? null : Array.isArray(v) ? v.join(",") : v;
}
