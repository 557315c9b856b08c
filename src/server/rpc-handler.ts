import type http from "node:http";
import type http2 from "node:http2";
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type ConnectRouterOptions, type ContextValues } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { clip } from "../errors/index.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface RpcHandlerOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  /** Requests for paths that are not RPCs (REST, the plain routes). */
  fallback: (req: Req, res: Res) => void;
  /** A handler that failed after it started answering (the response is then cut off). */
  onError: (cause: unknown) => void;
  /** Context values to start each call with (e.g. its access-log record). */
  contextValues?: (req: Req) => ContextValues;
}

// The gRPC and gRPC-Web JSON codecs are not offered: JSON callers use the
// Connect protocol or REST. (connect-node echoes part of a JSON parse error
// into grpc-message, where half a surrogate pair makes its encoder throw and
// the call never ends.)
const GRPC_JSON = /^application\/grpc(-web)?\+json/i;
// What connect-es reports as INTERNAL about a request it could not read: the caller's fault.
const UNDECODABLE = ["parse binary: ", "received compressed envelope, but do not know how to decompress"];
const undecodable = (message: string) => UNDECODABLE.some((prefix) => message.startsWith(prefix));

/**
 * Serves gRPC, gRPC-Web and Connect from one Connect router, like
 * connect-node's adapter, with what the fuzz suite showed that adapter
 * lacks (docs/security.md, "Input"): a request that cannot be decoded is
 * INVALID_ARGUMENT rather than INTERNAL (connect-es reports binary decoding
 * errors as internal), and a handler that fails mid-answer ends the response
 * instead of leaving the client waiting.
 */
export function rpcHandler(opts: RpcHandlerOptions): (req: Req, res: Res) => void {
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], ...opts });
  opts.routes(router);
  const paths = new Map<string, UniversalHandler>();
  for (const handler of router.handlers) paths.set(handler.requestPath, handler);

  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const handler = paths.get(q === -1 ? url : url.slice(0, q));
    if (!handler) return opts.fallback(req, res);
    const contentType = String(req.headers["content-type"] ?? "");
    if (GRPC_JSON.test(contentType)) {
      return trailersOnly(res, contentType, Code.InvalidArgument, "the JSON codec is not served over gRPC or gRPC-Web: use application/grpc(+proto), or the Connect protocol or REST for JSON");
    }
    const uReq = universalRequestFromNodeRequest(req, res, undefined, opts.contextValues?.(req));
    handler(uReq)
      .then((uRes) => {
        // Only an error needs the await; a success goes straight out.
        const out = decodingErrorsAsInvalid(uRes, contentType);
        return out instanceof Promise ? out.then((r) => universalResponseToNodeResponse(r, res)) : universalResponseToNodeResponse(out, res);
      })
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code === Code.Aborted) return;
        opts.onError(reason);
        if (!res.headersSent) {
          res.statusCode = 500;
          res.end();
        } else {
          res.destroy();
        }
      });
  };
}

/** A gRPC answer made only of headers: the status without a message. */
function trailersOnly(res: Res, contentType: string, code: Code, message: string): void {
  res.writeHead(200, {
    "content-type": contentType.replace(/\+json.*$/i, "+proto"),
    "grpc-status": String(code),
    "grpc-message": encodeURIComponent(message),
  });
  res.end();
}

function invalidMessage(parseError: string): string {
  return clip(`Invalid argument: request: the message could not be decoded (${parseError})`).replace(
    /[\uD800-\uDFFF]/g,
    "\uFFFD",
  );
}

/** connect-es answers an undecodable request with INTERNAL; the caller sent it, so it is INVALID_ARGUMENT. */
function decodingErrorsAsInvalid(uRes: UniversalServerResponse, contentType: string): UniversalServerResponse | Promise<UniversalServerResponse> {
  if (contentType.startsWith("application/grpc-web")) return { ...uRes, ...(uRes.body ? { body: rewriteGrpcWebTrailer(uRes.body) } : {}) };
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
  // The Connect protocol: a unary error is a JSON body with an HTTP status (500 for INTERNAL).
  return uRes.status === 500 && uRes.body ? connectErrorAsInvalid(uRes, uRes.body) : uRes;
}

/**
 * A Connect error body, read whole (it is small) before anything is written,
 * and rewritten when it reports an undecodable request: the status and the
 * length follow the body.
 */
async function connectErrorAsInvalid(uRes: UniversalServerResponse, body: AsyncIterable<Uint8Array>): Promise<UniversalServerResponse> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of body) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  let parsed: { code?: unknown; message?: unknown } | undefined;
  try {
    parsed = JSON.parse(bytes.toString("utf8")) as { code?: unknown; message?: unknown };
  } catch {
    parsed = undefined;
  }
  const refused = parsed?.code === "internal" && typeof parsed.message === "string" && undecodable(parsed.message);
  const out = refused ? Buffer.from(JSON.stringify({ code: "invalid_argument", message: invalidMessage(String(parsed?.message)) })) : bytes;
  const header = new Headers(uRes.header);
  header.set("content-length", String(out.byteLength));
  return { ...uRes, status: refused ? 400 : uRes.status, header, body: single(out) };
}

async function* single(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  yield bytes;
}

/**
 * The status in gRPC headers or trailers, as callers should read it: an
 * undecodable request is INVALID_ARGUMENT, and grpc-message is
 * percent-encoded only where the gRPC spec asks (bytes outside printable
 * ASCII, and `%`). connect-es encodes like encodeURIComponent, which
 * grpc-js shows undecoded ("Invalid argument%3A name%3A …").
 */
function rewriteGrpcStatus(headers: Headers | undefined): void {
  const raw = headers?.get("grpc-message");
  if (!headers || raw === null || raw === undefined) return;
  let message: string;
  try {
    message = decodeURIComponent(raw);
  } catch {
    return;
  }
  if (headers.get("grpc-status") === String(Code.Internal) && undecodable(message)) {
    headers.set("grpc-status", String(Code.InvalidArgument));
    message = invalidMessage(message);
  }
  headers.set("grpc-message", grpcPercentEncode(message));
}

function grpcPercentEncode(text: string): string {
  let out = "";
  for (const byte of Buffer.from(text, "utf8")) {
    out += byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** gRPC-Web carries the status in a final frame (flag 0x80) of the body. */
async function* rewriteGrpcWebTrailer(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    if (chunk.length < 5 || chunk[0] !== 0x80 || chunk.length !== 5 + Buffer.from(chunk).readUInt32BE(1)) {
      yield chunk;
      continue;
    }
    const headers = new Headers();
    for (const line of Buffer.from(chunk.subarray(5)).toString("latin1").split("\r\n")) {
      const at = line.indexOf(":");
      if (at > 0) headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
    }
    const before = headers.get("grpc-status");
    rewriteGrpcStatus(headers);
    if (headers.get("grpc-status") === before) {
      yield chunk;
      continue;
    }
    let text = "";
    headers.forEach((value, name) => (text += `${name}: ${value}\r\n`));
    const payload = Buffer.from(text, "latin1");
    const frame = Buffer.alloc(5 + payload.length);
    frame[0] = 0x80;
    frame.writeUInt32BE(payload.length, 1);
    payload.copy(frame, 5);
    yield frame;
  }
}
