import type * as http from "node:http";
import type { IncomingHttpHeaders } from "node:http";
import type * as http2 from "node:http2";
import { createRegistry, type DescFile, type DescMethodUnary, type DescService, type Registry } from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import { invalidArgument, unimplemented } from "../errors/index.js";
import { FieldLookup } from "./field-lookup.js";
import { JsonRenderer } from "./json-render.js";
import { RequestBinder } from "./request-binding.js";
import { RouteTable } from "./route-table.js";
import {
  BodyReadError,
  BodyTooLargeError,
  CallHeader,
  ClientGone,
  DEFAULT_MAX_BODY_BYTES,
  type InvokeUnary,
  type NodeRequest,
  readBody,
  type ResponseSink,
  sendError,
  sendJson,
} from "../http/index.js";

export interface RestHandlerOptions {
  /** Every service whose methods may carry google.api.http rules. */
  services: DescService[];
  /**
   * Calls a method with the message bound from the request: the same
   * authentication, checks, authorization and error shaping as every other
   * protocol (src/server/call-pipeline.ts), then the implementation itself.
   */
  invoke: InvokeUnary;
  /** REST-level errors get ErrorInfo domain `<area>.<serviceDomain>`, area being the first path segment. */
  serviceDomain: string;
  /** Default 1 MiB. */
  maxBodyBytes?: number;
  /** Context values to start each call with (e.g. its access-log record). */
  contextValues?: (req: NodeRequest) => ContextValues;
  /** Receives unexpected (non-Connect) errors for the log; the caller only sees "Internal error". */
  onInternalError?: (cause: unknown) => void;
  /**
   * Checks a call's headers before its body is read (src/server/call-pipeline.ts, admitBody):
   * undefined to go on at once, else a promise that rejects with the error to answer, the body unread.
   */
  admitBody?: (method: DescMethodUnary, req: NodeRequest) => Promise<void> | undefined;
}

/**
 * An HTTP/1.1 or HTTP/2 (compat) response. `write` is left out so that
 * connect-node's fallback response type, which re-types it, fits as well;
 * the transcoder only ever calls `end`.
 */
export type RestResponse = Omit<http.ServerResponse, "write"> | Omit<http2.Http2ServerResponse, "write">;

export type RestHandler = (req: NodeRequest, res: RestResponse) => Promise<void>;

// Request headers the implementations may rely on; everything else stays at the edge.
const FORWARDED_HEADERS = ["authorization", "x-request-id"] as const;

/**
 * The REST/JSON transcoder: every unary RPC with a google.api.http rule in
 * `services` becomes a route. Owns 404 and 405 for every path it is given.
 * Routes, templates and descriptors are compiled here, once.
 */
export function createRestHandler(opts: RestHandlerOptions): RestHandler {
  const table = new RouteTable(opts.services, opts.serviceDomain);
  const registry = registryFor(opts.services);
  const binder = new RequestBinder(new FieldLookup(), registry);
  const renderer = new JsonRenderer(registry);
  const maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const onInternalError = opts.onInternalError ?? (() => {});

  return async (req, res) => {
    const sink: ResponseSink = res;
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? "" : url.slice(q + 1);
    const httpMethod = req.method ?? "GET";

    const match = table.match(httpMethod, path);
    if (match.kind === "not-found") {
      sendError(sink, new ConnectError(`Not found: no REST route for ${path}`, Code.NotFound), {
        domain: table.domainForPath(path),
        onInternalError,
      });
      return;
    }
    if (match.kind === "method-not-allowed") {
      const allow = match.allowed.join(", ");
      sendError(sink, unimplemented(`${httpMethod} is not allowed on ${path}; allowed: ${allow}`), {
        domain: table.domainForPath(path),
        status: 405,
        headers: { allow },
        onInternalError,
      });
      return;
    }

    if (match.kind === "misplaced-slash") {
      sendError(sink, invalidArgument(match.field, match.description), { domain: match.route.errorDomain, onInternalError });
      return;
    }

    const route = match.route;
    const clientGone = ClientGone.watch(res);
    try {
      let body: Uint8Array | undefined;
      if (route.body.kind !== "none") {
        // Refused unread, over HTTP/1.1 the connection closes after the answer (src/server/listener.ts).
        await opts.admitBody?.(route.method, req);
        body = await readRequestBody(req, res, maxBodyBytes);
        if (body === undefined) return; // client gone mid-body
      }
      const input = binder.bind({ route, captures: match.captures, query, body });
      const output = await opts.invoke({
        method: route.method,
        message: input,
        header: new CallHeader(req.headers, forwardedHeaders),
        requestMethod: httpMethod,
        url,
        clientGone,
        values: opts.contextValues?.(req),
      });
      if (clientGone.gone) return; // nobody is listening any more
      sendJson(sink, 200, renderer.render(route.method.output, output, route.responseBody));
    } catch (e) {
      if (clientGone.gone) return;
      sendError(sink, e, { domain: route.errorDomain, onInternalError });
    } finally {
      clientGone.release();
    }
  };
}

async function readRequestBody(req: NodeRequest, res: RestResponse, limit: number): Promise<Uint8Array | undefined> {
  try {
    return await readBody(req, limit);
  } catch (e) {
    if (e instanceof BodyTooLargeError) {
      // The rest of the body is never read: over HTTP/1.1 the connection
      // closes after this response instead of draining an unbounded upload.
      if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
      throw invalidArgument("body", `is larger than the limit of ${limit} bytes`);
    }
    if (e instanceof BodyReadError) return undefined;
    throw e;
  }
}

function forwardedHeaders(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const name of FORWARDED_HEADERS) {
    const value = headers[name];
    if (typeof value === "string") out.set(name, value);
    else if (Array.isArray(value)) for (const v of value) out.append(name, v);
  }
  return out;
}

/**
 * The REST rendering of answers (every field, `null` for unset messages,
 * milliseconds), for other JSON protocols that must show the same shape
 * (Connect JSON, src/server/rpc/connect-json.ts).
 */
export function createJsonRenderer(services: readonly DescService[]): JsonRenderer {
  return new JsonRenderer(registryFor(services));
}

/** Types reachable from the services' files, for google.protobuf.Any in bodies and responses. */
function registryFor(services: readonly DescService[]): Registry {
  const files = new Set<DescFile>();
  const visit = (file: DescFile): void => {
    if (files.has(file)) return;
    files.add(file);
    for (const dep of file.dependencies) visit(dep);
  };
  for (const s of services) visit(s.file);
  return createRegistry(...files);
}
