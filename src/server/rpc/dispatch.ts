import type { DescMessage, DescMethod, DescMethodUnary, Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
  createConnectRouter,
} from "@connectrpc/connect";
import { createMethodSerializationLookup, type MethodSerializationLookup, type UniversalHandler } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { InvokeUnary, NodeRequest as Req, NodeResponse as Res } from "../../http/index.js";
import type { RpcPaths } from "./common.js";
import { isConnectJsonPost, serveConnectJson } from "./connect-json.js";
import { isPlainGrpcPost, serveGrpcUnary } from "./grpc-unary.js";
import { refuseUnread, trailersOnly } from "./status.js";
import { viaConnect } from "./via-connect.js";

export interface RpcHandlerOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  /** Requests for paths that are not RPCs (REST, the plain routes). */
  fallback: (req: Req, res: Res) => void;
  /** A handler that failed after it started answering (the response is then cut off). */
  onError: (cause: unknown) => void;
  /** Context values to start each call with (e.g. its access-log record). */
  contextValues?: (req: Req) => ContextValues;
  /** The JSON text of an answer as REST renders it: Connect JSON answers are rendered with it (connect-json.ts). */
  renderJson?: (schema: DescMessage, message: Message) => string;
  /**
   * Calls a unary implementation behind the call pipeline with a message already decoded (the
   * direct paths: Connect JSON, with renderJson, and plain gRPC unary calls).
   */
  direct?: InvokeUnary;
  /** The methods `direct` can call (the API's; health and reflection are the router's own). */
  directs?: (method: DescMethod) => boolean;
  /**
   * Checks a call's headers before its body is read (CallPipeline.admitBody): undefined to go
   * on at once, else a promise that rejects with the error to answer, the body unread.
   */
  admitBody?: (method: DescMethod, req: Req) => Promise<void> | undefined;
}

// The gRPC and gRPC-Web JSON codecs are not offered: JSON callers use the
// Connect protocol or REST. (connect-node echoes part of a JSON parse error
// into grpc-message, where half a surrogate pair makes its encoder throw and
// the call never ends.)
const GRPC_JSON = /^application\/grpc(-web)?\+json/i;
// connect-es's default limit (0xffffffff), where the router is given none.
const DEFAULT_READ_MAX_BYTES = 0xffffffff;

/**
 * Serves gRPC, gRPC-Web and Connect from one Connect router, like connect-node's adapter, with one
 * server path per kind of call (docs/architecture.md, "One path per request"): Connect JSON unary
 * calls to the API (connect-json.ts), plain gRPC unary calls to the API (grpc-unary.ts), and
 * everything else through connect-es's handler (via-connect.ts); every path ends in the same status
 * rewrites (status.ts). A path that fails mid-answer ends the response instead of leaving the
 * client waiting.
 */
export function rpcHandler(opts: RpcHandlerOptions): (req: Req, res: Res) => void {
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], ...opts });
  opts.routes(router);
  const handlers = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) handlers.set(handler.requestPath, handler);
  const readMaxBytes = opts.readMaxBytes ?? DEFAULT_READ_MAX_BYTES;
  const serializations = new Map<DescMethod, MethodSerializationLookup<DescMessage, DescMessage>>();
  for (const handler of router.handlers) {
    serializations.set(
      handler.method,
      createMethodSerializationLookup(handler.method, opts.binaryOptions, opts.jsonOptions, {
        readMaxBytes,
        writeMaxBytes: opts.writeMaxBytes ?? DEFAULT_READ_MAX_BYTES,
      }),
    );
  }
  const failed = (res: Res) => (reason: unknown) => {
    if (ConnectError.from(reason).code === Code.Aborted) return;
    opts.onError(reason);
    if (!res.headersSent) {
      res.statusCode = 500;
      res.end();
    } else {
      res.destroy();
    }
  };
  // What the paths need, resolved once rather than per call.
  const paths: RpcPaths = {
    invoke: opts.direct,
    renderJson: opts.renderJson,
    contextValues: opts.contextValues,
    serializations,
    readMaxBytes,
    maxTimeoutMs: opts.maxTimeoutMs ?? Number.MAX_SAFE_INTEGER,
    viaConnect: viaConnect(opts.contextValues, failed),
  };

  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const handler = handlers.get(q === -1 ? url : url.slice(0, q));
    if (!handler) return opts.fallback(req, res);
    const contentType = String(req.headers["content-type"] ?? "");
    if (GRPC_JSON.test(contentType)) {
      return trailersOnly(
        res,
        contentType,
        Code.InvalidArgument,
        "the JSON codec is not served over gRPC or gRPC-Web: use application/grpc(+proto), or the Connect protocol or REST for JSON",
      );
    }
    const admission = opts.admitBody?.(handler.method, req);
    if (admission) {
      return void admission.then(
        () => serve(req, res, handler, contentType),
        (e: unknown) => refuseUnread(res, contentType, ConnectError.from(e)),
      );
    }
    serve(req, res, handler, contentType);
  };

  function serve(req: Req, res: Res, handler: UniversalHandler, contentType: string): void {
    const invoke = paths.invoke;
    if (invoke && opts.directs?.(handler.method)) {
      if (paths.renderJson && isConnectJsonPost(req, handler.method, contentType)) {
        return void serveConnectJson(req, res, handler.method as DescMethodUnary, paths, invoke).catch(failed(res));
      }
      if (isPlainGrpcPost(req, handler.method, contentType)) {
        return void serveGrpcUnary(req, res, handler, contentType, paths, invoke).catch(failed(res));
      }
    }
    paths.viaConnect(req, res, handler, contentType);
  }
}
