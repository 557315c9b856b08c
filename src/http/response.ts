import type { JsonValue } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { BEARER_CHALLENGE, httpStatusFromCode, toConnectError, toStatusJson, withErrorInfo } from "../errors/index.js";

// Writing JSON answers: success JSON and google.rpc.Status errors, for HTTP/1.1 and HTTP/2
// (compat API) alike, by REST and every plain route.

/** What both response kinds offer that the transcoder uses. */
export interface ResponseSink {
  statusCode: number;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  setHeader(name: string, value: string | number): unknown;
  end(chunk: string): unknown;
}

export function sendJson(res: ResponseSink, status: number, body: JsonValue, headers?: Record<string, string>): void {
  if (res.headersSent || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("content-type", "application/json");
  res.setHeader("content-length", Buffer.byteLength(text));
  if (headers !== undefined) for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.end(text);
}

export interface ErrorOptions {
  /** ErrorInfo domain for errors that do not carry one yet. */
  readonly domain: string;
  /** Overrides the status of the gRPC → HTTP mapping (405 for a wrong method). */
  readonly status?: number;
  readonly headers?: Record<string, string>;
  /** Receives causes that are not ConnectErrors; the caller sees only "Internal error". */
  readonly onInternalError: (cause: unknown) => void;
}

/** Renders any thrown value as a google.rpc.Status body with the matching HTTP status. */
export function sendError(res: ResponseSink, thrown: unknown, opts: ErrorOptions): void {
  const err = withErrorInfo(toConnectError(thrown, opts.onInternalError), opts.domain);
  let headers = opts.headers;
  // UNAVAILABLE and a rate limit's RESOURCE_EXHAUSTED say when to retry.
  const retryAfter = err.metadata.get("retry-after");
  if (retryAfter) headers = { ...headers, "retry-after": retryAfter };
  // Every 401 names the scheme it wants (RFC 6750): the error's own challenge, or plain Bearer.
  if (err.code === Code.Unauthenticated && opts.status === undefined) {
    headers = { ...headers, "www-authenticate": err.metadata.get("www-authenticate") ?? BEARER_CHALLENGE };
  }
  sendJson(res, opts.status ?? httpStatusFromCode(err.code), toStatusJson(err), headers);
}
