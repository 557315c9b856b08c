import { Code, type ConnectError } from "@connectrpc/connect";
import { createEndStreamSerialization, codeToHttpStatus, endStreamFlag, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { clip } from "../../errors/index.js";
import type { NodeResponse as Res } from "../../http/index.js";
import { nodeHeaders } from "./common.js";

// The status rewrites every RPC path applies, and the answers to calls refused before connect-es
// sees them. What the fuzz suite showed connect-es lacks (docs/security.md, "Input"): a request
// that cannot be decoded is the caller's fault, INVALID_ARGUMENT rather than INTERNAL, and
// grpc-message is percent-encoded only where the gRPC spec asks.

// What connect-es reports as INTERNAL about a request it could not read: the caller's fault.
const UNDECODABLE = ["parse binary: ", "received compressed envelope, but do not know how to decompress"];
const undecodable = (message: string) => UNDECODABLE.some((prefix) => message.startsWith(prefix));

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
export function refuseUnread(res: Res, contentType: string, error: ConnectError): void {
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
export function trailersOnly(res: Res, contentType: string, code: Code, message: string): void {
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

/**
 * A Connect unary error body, rewritten when it reports an undecodable
 * request (connect-es answers those with INTERNAL; the caller sent it, so it
 * is INVALID_ARGUMENT). Undefined when it is some other error.
 */
export function connectErrorAsInvalid(bytes: Uint8Array): Buffer | undefined {
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
export function rewriteGrpcStatus(headers: Headers | undefined): void {
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

export async function* rewriteGrpcWebStream(body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  for await (const chunk of body) yield rewriteGrpcWebFrames(chunk);
}

/** gRPC-Web carries the status in a final frame (flag 0x80) of the body: `bytes` holds whole frames. */
export function rewriteGrpcWebFrames(bytes: Uint8Array): Uint8Array {
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
