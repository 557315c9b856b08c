import { brotliCompressSync, gzipSync } from "node:zlib";
import type { DescMethod, DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues } from "@connectrpc/connect";
import { type Compression, compressionNegotiate, readAllBytes } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { CallHeader, ClientGone, type InvokeUnary, type NodeRequest as Req, type NodeResponse as Res, readBody } from "../../http/index.js";
import { headerValue, type RpcPaths, webHeaders } from "./common.js";

// The one path of Connect JSON unary calls to the API's methods (docs/architecture.md, "One path
// per request"). It follows connect-es's unary Connect handler step by step, with connect-es's own
// pieces (compression negotiation, deadline parsing, bounded reading, serialization, error JSON
// and status mapping), so that its answers are the ones connect-es would give, byte for byte
// (connect-json.spec.ts compares them), except that the answer is rendered as REST renders it:
// both JSON protocols show a message the same way. What it saves per call: a handler context,
// linked abort signals and async iterables. Other Connect JSON requests (a GET, an unknown content
// type) are refused by connect-es's handler without calling anything.

const CONNECT_UNARY_JSON = /^application\/json(?:; ?charset=utf-?8)?$/i;
const ACCEPT_COMPRESSION = [compressionGzip, compressionBrotli];
// What connect-es does by default: smaller answers are not worth compressing.
const COMPRESS_MIN_BYTES = 1024;

/** A Connect unary POST of JSON: the calls this path serves. */
export function isConnectJsonPost(req: Req, method: DescMethod, contentType: string): boolean {
  return method.methodKind === "unary" && req.method === "POST" && CONNECT_UNARY_JSON.test(contentType);
}

export async function serveConnectJson(req: Req, res: Res, method: DescMethodUnary, paths: RpcPaths, invoke: InvokeUnary): Promise<void> {
  const h = req.headers;
  const clientGone = ClientGone.watch(res);
  const header: Record<string, string> = { "content-type": "application/json" };
  let status = 200;
  let body: Uint8Array;
  try {
    // In connect-es's order: the request's compression, then its deadline, before any body byte
    // is read. Most calls have neither header, and skip both parsers.
    const encoding = h["content-encoding"];
    let compression: Compression | null = null;
    if (encoding !== undefined && encoding !== "identity") {
      const negotiated = compressionNegotiate(ACCEPT_COMPRESSION, headerValue(encoding), null, "Accept-Encoding");
      if (negotiated.error) throw negotiated.error;
      compression = negotiated.request;
    }
    let timeoutMs: number | undefined;
    if (h["connect-timeout-ms"] !== undefined) {
      const timeout = parseTimeout(headerValue(h["connect-timeout-ms"]), paths.maxTimeoutMs);
      if (timeout.error) throw timeout.error;
      timeoutMs = timeout.timeoutMs;
    }
    let bytes: Uint8Array;
    const length = h["content-length"];
    if (!compression && length !== undefined && /^\d+$/.test(length) && Number(length) <= paths.readMaxBytes) {
      // A declared length within the limit (almost every call): read with Node's events.
      try {
        bytes = await readBody(req, Number(length));
      } catch {
        return; // the client went away mid-body
      }
    } else {
      bytes = await readAllBytes(req as AsyncIterable<Uint8Array>, paths.readMaxBytes, headerValue(length));
      if (compression) bytes = await compression.decompress(bytes, paths.readMaxBytes);
    }
    // Decoded before the pipeline, as connect-es does: an undecodable request is refused as it is.
    const input = paths.serializations.get(method)!.getI(false).parse(bytes);
    const output = await invoke({
      method,
      message: input,
      header: new CallHeader(h, webHeaders),
      requestMethod: "POST",
      url: req.url ?? "",
      clientGone,
      values: paths.contextValues?.(req) ?? createContextValues(),
      protocolName: "connect",
      timeoutMs,
    });
    body = Buffer.from(paths.renderJson!(method.output, output));
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
  const encoding = body.byteLength >= COMPRESS_MIN_BYTES ? acceptedEncoding(h["accept-encoding"]) : undefined;
  if (encoding === "gzip") body = gzipSync(body);
  else if (encoding === "br") body = brotliCompressSync(body);
  if (encoding) header["content-encoding"] = encoding;
  header["content-length"] = String(body.byteLength);
  res.writeHead(status, header);
  res.end(body);
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
