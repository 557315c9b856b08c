import { Code, ConnectError, type ContextValues, createContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerRequest, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { NodeRequest as Req, NodeResponse as Res } from "../../http/index.js";
import { nodeHeaders, webHeaders } from "./common.js";
import { connectErrorAsInvalid, rewriteGrpcStatus, rewriteGrpcWebFrames, rewriteGrpcWebStream } from "./status.js";

// The path through connect-es's own handler: streaming calls, gRPC-Web, Connect proto, and what
// the direct paths leave to connect-es's rules (compressed or deadlined gRPC calls, refusals).

/** Serves a call with connect-es's `handler`; `body`, when given, replaces the request stream (bytes already read). */
export function viaConnect(
  contextValues: ((req: Req) => ContextValues) | undefined,
  failed: (res: Res) => (reason: unknown) => void,
): (req: Req, res: Res, handler: UniversalHandler, contentType: string, body?: AsyncIterable<Uint8Array>) => void {
  return (req, res, handler, contentType, body) => {
    // One answer message (unary and client-streaming methods): read whole and written at once.
    const single = handler.method.methodKind === "unary" || handler.method.methodKind === "client_streaming";
    const values = contextValues?.(req) ?? createContextValues();
    handler(universalRequest(req, res, values, body))
      .then((uRes) => {
        if (single) return writeSingle(uRes, res, contentType);
        return universalResponseToNodeResponse(decodingErrorsAsInvalid(uRes, contentType), res);
      })
      .catch(failed(res));
  };
}

/**
 * The call as Connect's handlers take it. Like connect-node's
 * universalRequestFromNodeRequest, less two costs every call paid
 * (docs/architecture.md, "One path per request"): its signal is aborted only
 * when the client goes away before the answer is complete, with a reason (a
 * signal aborted without one makes a DOMException and captures its stack),
 * and the body is the request stream itself, not a generator around it.
 */
function universalRequest(
  req: Req,
  res: Res,
  contextValues: ContextValues | undefined,
  body?: AsyncIterable<Uint8Array>,
): UniversalServerRequest {
  const controller = new AbortController();
  res.once("close", () => {
    if (!res.writableEnded) controller.abort(new ConnectError("the client went away before the answer was complete", Code.Canceled));
  });
  // HTTP/1.0 and HTTP/2 may name no host; the URL only informs the handler (context.url, a GET's query).
  const authority = ("authority" in req ? req.authority : req.headers.host) || "localhost";
  const encrypted = "encrypted" in req.socket && req.socket.encrypted === true;
  return {
    httpVersion: req.httpVersion,
    method: req.method ?? "",
    url: `${encrypted ? "https" : "http"}://${authority}${req.url ?? ""}`,
    header: webHeaders(req.headers),
    body: body ?? (req as AsyncIterable<Uint8Array>),
    signal: controller.signal,
    contextValues,
  };
}

/**
 * An answer of one message (or an error), written in one go: its body is
 * read whole (it is one envelope), then headers, body and trailers leave
 * together, with none of the per-chunk promises and listeners a streamed
 * answer needs. Undecodable requests are reported as INVALID_ARGUMENT here.
 */
async function writeSingle(uRes: UniversalServerResponse, res: Res, contentType: string): Promise<void> {
  const chunks: Uint8Array[] = [];
  if (uRes.body) for await (const chunk of uRes.body) chunks.push(chunk);
  let body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
  let status = uRes.status;
  const header = uRes.header;
  if (contentType.startsWith("application/grpc-web")) {
    body = rewriteGrpcWebFrames(body);
  } else if (contentType.startsWith("application/grpc")) {
    rewriteGrpcStatus(header);
    rewriteGrpcStatus(uRes.trailer);
  } else if (status === 500 && body.length > 0) {
    const rewritten = connectErrorAsInvalid(body);
    if (rewritten) {
      status = 400;
      body = rewritten;
      header?.set("content-length", String(body.byteLength));
    }
  }
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, header ? nodeHeaders(header) : undefined);
  if (uRes.trailer) res.addTrailers(nodeHeaders(uRes.trailer));
  res.end(body);
}

/** A streamed answer, with its status rewritten as writeSingle does (gRPC and gRPC-Web; a Connect stream ends in a message, not a status). */
function decodingErrorsAsInvalid(uRes: UniversalServerResponse, contentType: string): UniversalServerResponse {
  if (contentType.startsWith("application/grpc-web")) return { ...uRes, ...(uRes.body ? { body: rewriteGrpcWebStream(uRes.body) } : {}) };
  if (contentType.startsWith("application/grpc")) {
    const { body, trailer, header } = uRes;
    rewriteGrpcStatus(header);
    if (!body || !trailer) return uRes;
    return {
      ...uRes,
      body: (async function* () {
        yield* body;
        rewriteGrpcStatus(trailer);
      })(),
    };
  }
  return uRes;
}
