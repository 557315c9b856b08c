import type { DescMethod, DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { compressionNegotiate, type UniversalHandler } from "@connectrpc/connect/protocol";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { CallHeader, ClientGone, type InvokeUnary, type NodeRequest as Req, type NodeResponse as Res } from "../../http/index.js";
import { headerValue, nodeHeaders, type RpcPaths, webHeaders } from "./common.js";
import { rewriteGrpcStatus } from "./status.js";

// What connect-es does by default: smaller answers are not worth compressing.
const COMPRESS_MIN_BYTES = 1024;
const GRPC_PROTO = /^application\/grpc(?:\+proto)?$/i;
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
/** A success's trailers (read, never changed, by node). */
const OK_TRAILER: Readonly<Record<string, string>> = Object.freeze({ "grpc-status": "0" });

/** A gRPC (HTTP/2, binary) unary POST without a deadline or request compression: a candidate for the direct path. */
export function isPlainGrpcPost(req: Req, method: DescMethod, contentType: string): boolean {
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
export async function serveGrpcUnary(
  req: Req,
  res: Res,
  handler: UniversalHandler,
  contentType: string,
  paths: RpcPaths,
  invoke: InvokeUnary,
): Promise<void> {
  const read = await readUpTo(req, paths.readMaxBytes + 5);
  if (!read) return; // the client went away mid-body
  if ("partial" in read) return paths.viaConnect(req, res, handler, contentType, read.partial);
  const bytes = read.whole;
  if (bytes.byteLength < 5 || bytes[0] !== 0 || bytes.readUInt32BE(1) !== bytes.byteLength - 5) {
    return paths.viaConnect(
      req,
      res,
      handler,
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
  // As connect-es's fetch Headers would give them (lower-case names, in name order); an error's
  // trailers are made by connect-es (setTrailerStatus), a success's are this one status.
  const header: Record<string, string> = { "content-type": "application/grpc+proto" };
  if (compression.response) header["grpc-encoding"] = compression.response.name;
  let trailer: Record<string, string> = OK_TRAILER;
  const clientGone = ClientGone.watch(res);
  let body: Uint8Array = new Uint8Array(0);
  try {
    const serialization = paths.serializations.get(method)!;
    // Decoded before the pipeline, as connect-es does.
    const input = serialization.getI(true).parse(bytes.subarray(5));
    const output = await invoke({
      method,
      message: input,
      header: new CallHeader(req.headers, webHeaders),
      requestMethod: "POST",
      url: req.url ?? "",
      clientGone,
      values: paths.contextValues?.(req) ?? createContextValues(),
      protocolName: "grpc",
    });
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
    const failed = new Headers({ "grpc-status": "0" });
    setTrailerStatus(failed, e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e));
    rewriteGrpcStatus(failed);
    trailer = nodeHeaders(failed);
  } finally {
    clientGone.release();
  }
  if (clientGone.gone || res.writableEnded || res.destroyed) return;
  res.writeHead(200, header);
  res.addTrailers(trailer);
  res.end(body);
}
