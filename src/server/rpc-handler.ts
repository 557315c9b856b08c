import type http from "node:http";
import { brotliCompressSync, gzipSync } from "node:zlib";
import type { DescMessage, DescMethod, DescMethodUnary, Message } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createConnectRouter,
  createContextValues,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
} from "@connectrpc/connect";
import {
  compressionNegotiate,
  createMethodSerializationLookup,
  type MethodSerializationLookup,
  type UniversalHandler,
  type UniversalServerRequest,
  type UniversalServerResponse,
} from "@connectrpc/connect/protocol";
import { codeToHttpStatus, createEndStreamSerialization, endStreamFlag, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { compressionBrotli, compressionGzip, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import { clip } from "../errors/index.js";
import { CallHeader, ClientGone, type RestInvoke } from "../rest/index.js";
import { readBody } from "../rest/body.js";
import { answerKey, type AnswerSlot } from "./call-pipeline.js";
import type { NodeRequest as Req, NodeResponse as Res } from "./http-types.js";

export interface RpcHandlerOptions extends ConnectRouterOptions {
  routes: (router: ConnectRouter) => void;
  /** Requests for paths that are not RPCs (REST, the plain routes). */
  fallback: (req: Req, res: Res) => void;
  /** A handler that failed after it started answering (the response is then cut off). */
  onError: (cause: unknown) => void;
  /** Context values to start each call with (e.g. its access-log record). */
  contextValues?: (req: Req) => ContextValues;
  /**
   * The JSON text of an answer as REST renders it: Connect JSON answers are
   * rendered with it, so both JSON protocols show a message the same way.
   */
  renderJson?: (schema: DescMessage, message: Message) => string;
  /**
   * Calls a unary implementation behind the call pipeline with a message
   * already decoded (the REST entry point's invoke). With it and renderJson,
   * plain Connect JSON unary calls skip connect-es's handler (see
   * serveConnectJson).
   */
  direct?: RestInvoke;
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
  // What the direct paths need, resolved once rather than per call.
  const direct: DirectCall | undefined = opts.direct && {
    invoke: opts.direct,
    renderJson: opts.renderJson,
    contextValues: opts.contextValues,
    serializations,
  };

  return (req, res) => {
    const url = req.url ?? "";
    const q = url.indexOf("?");
    const handler = paths.get(q === -1 ? url : url.slice(0, q));
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
        () => serve(req, res, handler, url, q, contentType),
        (e: unknown) => refuseUnread(res, contentType, ConnectError.from(e)),
      );
    }
    serve(req, res, handler, url, q, contentType);
  };

  function serve(req: Req, res: Res, handler: UniversalHandler, url: string, q: number, contentType: string): void {
    if (direct && opts.directs?.(handler.method)) {
      if (direct.renderJson && isPlainConnectJsonPost(req, handler.method, contentType, readMaxBytes)) {
        return void serveConnectJson(req, res, handler.method as DescMethodUnary, url, direct, direct.renderJson).catch(failed(res));
      }
      if (isPlainGrpcPost(req, handler.method, contentType)) {
        return void serveGrpcUnary(req, res, handler, url, contentType, direct, readMaxBytes, viaConnect).catch(failed(res));
      }
    }
    viaConnect(req, res, handler, url, q, contentType);
  }

  /** The call through connect-es's handler; `body`, when given, replaces the request stream (bytes already read). */
  function viaConnect(
    req: Req,
    res: Res,
    handler: UniversalHandler,
    url: string,
    q: number,
    contentType: string,
    body?: AsyncIterable<Uint8Array>,
  ): void {
    // One answer message (unary and client-streaming methods): read whole and written at once.
    const single = handler.method.methodKind === "unary" || handler.method.methodKind === "client_streaming";
    const values = opts.contextValues?.(req) ?? createContextValues();
    let json: JsonAnswer | undefined;
    if (handler.method.methodKind === "unary" && opts.renderJson && isConnectJson(req, url, q, contentType)) {
      json = {
        slot: { message: undefined },
        schema: handler.method.output,
        render: opts.renderJson,
        encoding: acceptedEncoding(req.headers["accept-encoding"]),
      };
      values.set(answerKey, json.slot);
    }
    handler(universalRequest(req, res, values, body))
      .then((uRes) => {
        if (single) return writeSingle(uRes, res, contentType, json);
        return universalResponseToNodeResponse(decodingErrorsAsInvalid(uRes, contentType), res);
      })
      .catch(failed(res));
  }

  /** A handler that failed outside its own error handling: one response ends, not the process. */
  function failed(res: Res): (reason: unknown) => void {
    return (reason) => {
      if (ConnectError.from(reason).code === Code.Aborted) return;
      opts.onError(reason);
      if (!res.headersSent) {
        res.statusCode = 500;
        res.end();
      } else {
        res.destroy();
      }
    };
  }
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

/** Node's request headers as fetch Headers, without HTTP/2 pseudo-headers (`:path`, …). */
function webHeaders(node: http.IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const name in node) {
    if (name.charCodeAt(0) === 0x3a) continue;
    const value = node[name];
    if (typeof value === "string") out.append(name, value);
    else if (value) for (const v of value) out.append(name, v);
  }
  return out;
}

function nodeHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/**
 * An answer of one message (or an error), written in one go: its body is
 * read whole (it is one envelope), then headers, body and trailers leave
 * together, with none of the per-chunk promises and listeners a streamed
 * answer needs. Undecodable requests are reported as INVALID_ARGUMENT here.
 */
async function writeSingle(uRes: UniversalServerResponse, res: Res, contentType: string, json?: JsonAnswer): Promise<void> {
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
  if (json?.slot.message && status === 200 && header) {
    // connect-es wrote an empty message (call-pipeline.ts, answerKey): the real one is rendered and compressed here.
    const answer = compressedAnswer(Buffer.from(json.render(json.schema, json.slot.message)), json.encoding);
    body = answer.body;
    if (answer.encoding) header.set("content-encoding", answer.encoding);
    else header.delete("content-encoding");
    header.set("content-length", String(body.byteLength));
  }
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, header ? nodeHeaders(header) : undefined);
  if (uRes.trailer) res.addTrailers(nodeHeaders(uRes.trailer));
  res.end(body);
}

// connect-es's default limit (0xffffffff), where the router is given none.
const DEFAULT_READ_MAX_BYTES = 0xffffffff;
const CONNECT_UNARY_JSON = /^application\/json(?:; ?charset=utf-?8)?$/i;

/**
 * A Connect unary POST of JSON that the direct path serves exactly as
 * connect-es would: no request compression, no connect-timeout-ms (a
 * deadline), a declared length within readMaxBytes. Anything else takes
 * connect-es's handler, which owns those rules and their errors.
 */
function isPlainConnectJsonPost(req: Req, method: DescMethod, contentType: string, readMaxBytes: number): boolean {
  if (method.methodKind !== "unary" || req.method !== "POST" || !CONNECT_UNARY_JSON.test(contentType)) return false;
  const h = req.headers;
  const encoding = h["content-encoding"];
  if ((encoding !== undefined && encoding !== "identity") || h["connect-timeout-ms"] !== undefined) return false;
  const length = h["content-length"];
  return length !== undefined && /^\d+$/.test(length) && Number(length) <= readMaxBytes;
}

/**
 * A plain Connect JSON unary call (docs/architecture.md, "One path per
 * request"): decoded with connect-es's own serialization (same limits and
 * errors), run through the same call pipeline as every other entry point,
 * rendered as REST renders it, and errors written with connect-es's own
 * error JSON and status mapping, without a handler context, linked abort
 * signals or async iterables per call.
 */
async function serveConnectJson(
  req: Req,
  res: Res,
  method: DescMethodUnary,
  url: string,
  direct: DirectCall,
  renderJson: (schema: DescMessage, message: Message) => string,
): Promise<void> {
  const clientGone = ClientGone.watch(res);
  const header: Record<string, string> = { "content-type": "application/json" };
  let status = 200;
  let body: Uint8Array;
  try {
    let bytes: Uint8Array;
    try {
      // Its declared length, already checked against readMaxBytes (isPlainConnectJsonPost).
      bytes = await readBody(req, Number(req.headers["content-length"]));
    } catch {
      return; // the client went away mid-body
    }
    // Decoded before the pipeline, as connect-es does: an undecodable request is refused as it is.
    const input = direct.serializations.get(method)!.getI(false).parse(bytes);
    const values = direct.contextValues?.(req) ?? createContextValues();
    const output = await direct.invoke(method, input, new CallHeader(req.headers, webHeaders), "POST", url, clientGone, values, "connect");
    body = Buffer.from(renderJson(method.output, output));
  } catch (e) {
    const error = e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
    status = codeToHttpStatus(error.code);
    // As connect-es: the error's metadata is set after the content type, and wins.
    error.metadata.forEach((value, key) => void (header[key] = value));
    body = errorToJsonBytes(error, {});
  } finally {
    clientGone.release();
  }
  if (clientGone.gone || res.writableEnded || res.destroyed) return;
  const answer = compressedAnswer(body, acceptedEncoding(req.headers["accept-encoding"]));
  body = answer.body;
  if (answer.encoding) header["content-encoding"] = answer.encoding;
  header["content-length"] = String(body.byteLength);
  res.writeHead(status, header);
  res.end(body);
}

const GRPC_PROTO = /^application\/grpc(?:\+proto)?$/i;
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];

/** A gRPC (HTTP/2, binary) unary POST without a deadline or request compression: a candidate for the direct path. */
function isPlainGrpcPost(req: Req, method: DescMethod, contentType: string): boolean {
  if (method.methodKind !== "unary" || req.method !== "POST" || req.httpVersionMajor !== 2 || !GRPC_PROTO.test(contentType)) return false;
  const encoding = req.headers["grpc-encoding"];
  return (encoding === undefined || encoding === "identity") && req.headers["grpc-timeout"] === undefined;
}

/** The whole body, or, past `cap` bytes, what was read followed by the rest of the stream (left for connect-es). */
function readUpTo(req: Req, cap: number): Promise<{ whole: Buffer } | { partial: AsyncIterable<Uint8Array> } | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onGone);
      req.off("close", onGone);
    };
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.byteLength;
      if (size <= cap) return;
      done();
      req.pause();
      resolve({
        partial: (async function* () {
          yield* chunks;
          yield* req as AsyncIterable<Uint8Array>;
        })(),
      });
    };
    const onEnd = (): void => {
      done();
      resolve({ whole: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size) });
    };
    const onGone = (): void => {
      done();
      resolve(undefined);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onGone);
    req.on("close", onGone);
  });
}

/**
 * A plain gRPC unary call (docs/architecture.md, "One path per request"):
 * one uncompressed envelope, decoded with connect-es's serialization, run
 * through the call pipeline, answered with the headers, envelope and
 * trailers connect-es would write (its compression negotiation and trailer
 * status, then the same rewrites as writeSingle). A body that is anything
 * else (several or compressed envelopes, more than readMaxBytes) goes to
 * connect-es's handler with the bytes already read, so its rules and errors
 * stay the only ones.
 */
async function serveGrpcUnary(
  req: Req,
  res: Res,
  handler: UniversalHandler,
  url: string,
  contentType: string,
  direct: DirectCall,
  readMaxBytes: number,
  viaConnect: (
    req: Req,
    res: Res,
    handler: UniversalHandler,
    url: string,
    q: number,
    contentType: string,
    body?: AsyncIterable<Uint8Array>,
  ) => void,
): Promise<void> {
  const read = await readUpTo(req, readMaxBytes + 5);
  if (!read) return; // the client went away mid-body
  const q = url.indexOf("?");
  if ("partial" in read) return viaConnect(req, res, handler, url, q, contentType, read.partial);
  const bytes = read.whole;
  if (bytes.byteLength < 5 || bytes[0] !== 0 || bytes.readUInt32BE(1) !== bytes.byteLength - 5) {
    return viaConnect(
      req,
      res,
      handler,
      url,
      q,
      contentType,
      (async function* () {
        yield bytes;
      })(),
    );
  }
  const method = handler.method as DescMethodUnary;
  const compression = compressionNegotiate(
    ACCEPT_COMPRESSION,
    null,
    headerValue(req.headers["grpc-accept-encoding"]),
    "grpc-accept-encoding",
  );
  const header = new Headers({ "content-type": "application/grpc+proto" });
  if (compression.response) header.set("grpc-encoding", compression.response.name);
  const trailer = new Headers({ "grpc-status": "0" });
  const clientGone = ClientGone.watch(res);
  let body: Uint8Array = new Uint8Array(0);
  try {
    const serialization = direct.serializations.get(method)!;
    // Decoded before the pipeline, as connect-es does.
    const input = serialization.getI(true).parse(bytes.subarray(5));
    const values = direct.contextValues?.(req) ?? createContextValues();
    const output = await direct.invoke(method, input, new CallHeader(req.headers, webHeaders), "POST", url, clientGone, values, "grpc");
    let message = serialization.getO(true).serialize(output);
    let flag = 0;
    if (compression.response && message.byteLength >= COMPRESS_MIN_BYTES) {
      message = await compression.response.compress(message);
      flag = 1;
    }
    body = Buffer.alloc(5 + message.byteLength);
    body[0] = flag;
    (body as Buffer).writeUInt32BE(message.byteLength, 1);
    (body as Buffer).set(message, 5);
  } catch (e) {
    setTrailerStatus(trailer, e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e));
  } finally {
    clientGone.release();
  }
  if (clientGone.gone || res.writableEnded || res.destroyed) return;
  rewriteGrpcStatus(trailer);
  res.writeHead(200, nodeHeaders(header));
  res.addTrailers(nodeHeaders(trailer));
  res.end(body);
}

function headerValue(v: string | string[] | undefined): string | null {
  return v === undefined ? null : Array.isArray(v) ? v.join(",") : v;
}

/** A Connect unary call whose answer is JSON, and where its message will be found. */
interface JsonAnswer {
  slot: AnswerSlot;
  schema: DescMessage;
  render: (schema: DescMessage, message: Message) => string;
  /** How the answer may be compressed (Accept-Encoding). */
  encoding: "gzip" | "br" | undefined;
}

/** A Connect unary call asking for JSON: a POST of application/json, or a GET with encoding=json. */
function isConnectJson(req: Req, url: string, q: number, contentType: string): boolean {
  if (req.method === "GET") return q !== -1 && new URLSearchParams(url.slice(q + 1)).get("encoding") === "json";
  return /^application\/json\b/i.test(contentType);
}

// What connect-es does by default: smaller answers are not worth compressing.
const COMPRESS_MIN_BYTES = 1024;

/** A Connect unary answer, compressed with the accepted encoding when it is large enough to be worth it. */
function compressedAnswer(
  body: Uint8Array,
  accepted: "gzip" | "br" | undefined,
): { body: Uint8Array; encoding: "gzip" | "br" | undefined } {
  const encoding = body.byteLength >= COMPRESS_MIN_BYTES ? accepted : undefined;
  if (encoding === "gzip") return { body: gzipSync(body), encoding };
  if (encoding === "br") return { body: brotliCompressSync(body), encoding };
  return { body, encoding: undefined };
}

/** What the direct paths call and decode with (built once in rpcHandler). */
interface DirectCall {
  invoke: RestInvoke;
  renderJson: ((schema: DescMessage, message: Message) => string) | undefined;
  contextValues: ((req: Req) => ContextValues) | undefined;
  serializations: Map<DescMethod, MethodSerializationLookup<DescMessage, DescMessage>>;
}

/** The compression a Connect unary answer may use, in the router's order (gzip, then br), from Accept-Encoding. */
function acceptedEncoding(header: string | string[] | undefined): "gzip" | "br" | undefined {
  if (typeof header !== "string") return undefined;
  const accepted = new Set<string>();
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.split(";").map((p) => p.trim().toLowerCase());
    if (!params.some((p) => /^q=0(\.0*)?$/.test(p))) accepted.add(name);
  }
  return accepted.has("gzip") ? "gzip" : accepted.has("br") ? "br" : undefined;
}

const CONNECT_STREAM = /^application\/connect\+(?:json|proto)\b/i;
const endStreamSerialization = createEndStreamSerialization({});

/**
 * A call refused before its body was read (RpcHandlerOptions.admitBody), answered as connect-es
 * answers its errors: gRPC the status in trailers, gRPC-Web in headers only (trailers-only),
 * Connect unary its error JSON and HTTP status, Connect streaming an end-stream message (HTTP 200).
 * The body stays unread: HTTP/1.1 closes the connection after the answer (listener.ts), and Node
 * resets an HTTP/2 stream answered before its request ended with NO_ERROR (RFC 9113 §8.1), which
 * tells the client to stop sending.
 */
function refuseUnread(res: Res, contentType: string, error: ConnectError): void {
  if (res.headersSent || res.destroyed) return;
  if (contentType.startsWith("application/grpc")) {
    const status = new Headers();
    setTrailerStatus(status, error);
    rewriteGrpcStatus(status);
    const header = { "content-type": contentType.replace(/\+json.*$/i, "+proto") };
    if (contentType.startsWith("application/grpc-web")) {
      // Trailers-only: gRPC-Web has no HTTP trailers.
      res.writeHead(200, { ...header, ...nodeHeaders(status) });
    } else {
      // As connect-es answers an error: headers, then the status in trailers.
      res.writeHead(200, header);
      res.addTrailers(nodeHeaders(status));
    }
    res.end();
  } else if (CONNECT_STREAM.test(contentType)) {
    const codec = contentType.toLowerCase().startsWith("application/connect+json") ? "json" : "proto";
    const end = endStreamSerialization.serialize({ metadata: new Headers(), error });
    const body = Buffer.alloc(5 + end.byteLength);
    body[0] = endStreamFlag;
    body.writeUInt32BE(end.byteLength, 1);
    body.set(end, 5);
    res.writeHead(200, { "content-type": `application/connect+${codec}`, "content-length": String(body.byteLength) });
    res.end(body);
  } else {
    const header: Record<string, string> = { "content-type": "application/json" };
    error.metadata.forEach((value, key) => void (header[key] = value));
    const body = errorToJsonBytes(error, {});
    header["content-length"] = String(body.byteLength);
    res.writeHead(codeToHttpStatus(error.code), header);
    res.end(body);
  }
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
  return clip(`Invalid argument: request: the message could not be decoded (${parseError})`).replace(/[\uD800-\uDFFF]/g, "\uFFFD");
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

/**
 * A Connect unary error body, rewritten when it reports an undecodable
 * request (connect-es answers those with INTERNAL; the caller sent it, so it
 * is INVALID_ARGUMENT). Undefined when it is some other error.
 */
function connectErrorAsInvalid(bytes: Uint8Array): Buffer | undefined {
  let parsed: { code?: unknown; message?: unknown } | undefined;
  try {
    parsed = JSON.parse(Buffer.from(bytes).toString("utf8")) as { code?: unknown; message?: unknown };
  } catch {
    return undefined;
  }
  if (parsed?.code !== "internal" || typeof parsed.message !== "string" || !undecodable(parsed.message)) return undefined;
  return Buffer.from(JSON.stringify({ code: "invalid_argument", message: invalidMessage(parsed.message) }));
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
    out +=
      byte >= 0x20 && byte <= 0x7e && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

async function* rewriteGrpcWebStream(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield rewriteGrpcWebFrames(chunk);
}

/** gRPC-Web carries the status in a final frame (flag 0x80) of the body: `bytes` holds whole frames. */
function rewriteGrpcWebFrames(bytes: Uint8Array): Uint8Array {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + 5 <= buf.length; ) {
    const end = at + 5 + buf.readUInt32BE(at + 1);
    if (end > buf.length) break;
    if (buf[at] === 0x80) {
      const trailer = rewriteTrailerFrame(buf.subarray(at + 5, end));
      return trailer ? Buffer.concat([buf.subarray(0, at), trailer, buf.subarray(end)]) : bytes;
    }
    at = end;
  }
  return bytes;
}

/** A new trailer frame when the status in `payload` had to be rewritten, else undefined. */
function rewriteTrailerFrame(payload: Buffer): Buffer | undefined {
  const headers = new Headers();
  for (const line of payload.toString("latin1").split("\r\n")) {
    const at = line.indexOf(":");
    if (at > 0) headers.append(line.slice(0, at).trim(), line.slice(at + 1).trim());
  }
  const before = headers.get("grpc-status");
  const message = headers.get("grpc-message");
  rewriteGrpcStatus(headers);
  if (headers.get("grpc-status") === before && headers.get("grpc-message") === message) return undefined;
  let text = "";
  headers.forEach((value, name) => {
    text += `${name}: ${value}\r\n`;
  });
  const out = Buffer.alloc(5 + Buffer.byteLength(text, "latin1"));
  out[0] = 0x80;
  out.writeUInt32BE(out.length - 5, 1);
  out.write(text, 5, "latin1");
  return out;
}
