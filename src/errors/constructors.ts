import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { isDataError, isDatabaseUnavailable, isTransactionConflict } from "./pg-errors.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  QuotaFailureSchema,
  ResourceInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";

/** Longest text an error repeats from a request; more would not fit a gRPC header. */
const MAX_ERROR_TEXT = 512;

/**
 * `text` cut to MAX_ERROR_TEXT characters (never inside a surrogate pair):
 * error messages quote input, and an unbounded one breaks HTTP/2 frames.
 */
export function clip(text: string, max = MAX_ERROR_TEXT): string {
  if (text.length <= max) return text;
  const end = /[\uD800-\uDBFF]/.test(text[max - 1] ?? "") ? max - 1 : max;
  return `${text.slice(0, end)}…`;
}

export interface FieldViolation {
  field: string;
  description: string;
  /** The violation's kind, UPPER_SNAKE_CASE (google.rpc.BadRequest.FieldViolation.reason); REQUIRED for an empty required field. */
  reason?: string;
}

/** What a violation of an empty required field says, and its reason (docs/design.md, "Errors"). */
export const REQUIRED_DESCRIPTION = "is required";
export const REQUIRED_REASON = "REQUIRED";

export function invalidArgument(field: string, description: string): ConnectError {
  return invalidArguments([{ field, description }]);
}

/**
 * INVALID_ARGUMENT for a required field left empty: the violation's reason is REQUIRED, so a
 * client can tell "missing" from "malformed" without reading the text; `rule` says what a
 * value must also be (a group's name pattern), after "is required".
 */
export function required(field: string, rule?: string): ConnectError {
  return invalidArguments([
    { field, description: rule ? `${REQUIRED_DESCRIPTION} and ${rule}` : REQUIRED_DESCRIPTION, reason: REQUIRED_REASON },
  ]);
}

/**
 * INVALID_ARGUMENT with one BadRequest violation per field; the message names the first. A
 * violation that says only "is required" is a REQUIRED one wherever it was made, so every
 * required-field check answers alike.
 */
export function invalidArguments(given: FieldViolation[]): ConnectError {
  const violations = given.map((v) => ({
    field: clip(v.field),
    description: clip(v.description),
    reason: v.reason ?? (v.description === REQUIRED_DESCRIPTION ? REQUIRED_REASON : ""),
  }));
  const first = violations[0] ?? { field: "request", description: "is invalid" };
  return new ConnectError(`Invalid argument: ${first.field}: ${first.description}`, Code.InvalidArgument, undefined, [
    { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: violations }) },
  ]);
}

/** FAILED_PRECONDITION with a PreconditionFailure violation of `type` (e.g. RESOURCE_NOT_EMPTY). */
export function failedPrecondition(type: string, given: string, subject = ""): ConnectError {
  const description = clip(given);
  return new ConnectError(`Precondition failed: ${description}`, Code.FailedPrecondition, undefined, [
    {
      desc: PreconditionFailureSchema,
      value: create(PreconditionFailureSchema, { violations: [{ type, subject, description }] }),
    },
  ]);
}

/** NOT_FOUND naming the resource type and uid that was looked for. */
export function notFound(resourceType: string, name: string): ConnectError {
  const resourceName = clip(name);
  return new ConnectError(`Not found: ${resourceType} ${resourceName}`, Code.NotFound, undefined, [
    {
      desc: ResourceInfoSchema,
      value: create(ResourceInfoSchema, { resourceType, resourceName, description: `${resourceType} does not exist` }),
    },
  ]);
}

/** ALREADY_EXISTS when a unique name collides. */
export function alreadyExists(resourceType: string, name: string, given: string): ConnectError {
  const resourceName = clip(name);
  const description = clip(given);
  return new ConnectError(`Already exists: ${description}`, Code.AlreadyExists, undefined, [
    { desc: ResourceInfoSchema, value: create(ResourceInfoSchema, { resourceType, resourceName, description }) },
  ]);
}

/** OUT_OF_RANGE: the request is valid but asks for more than the service gives (e.g. an unpaged v1 List over its cap). */
export function outOfRange(description: string): ConnectError {
  return new ConnectError(`Out of range: ${clip(description)}`, Code.OutOfRange);
}

/** RESOURCE_EXHAUSTED: a per-caller limit (open streams). */
export function resourceExhausted(description: string): ConnectError {
  return new ConnectError(`Resource exhausted: ${clip(description)}`, Code.ResourceExhausted);
}

/** RESOURCE_EXHAUSTED with a QuotaFailure naming what is at its limit (an organization's subscriptions). */
export function quotaExceeded(subject: string, description: string): ConnectError {
  const violation = { subject: clip(subject), description: clip(description) };
  return new ConnectError(`Resource exhausted: ${violation.description}`, Code.ResourceExhausted, undefined, [
    { desc: QuotaFailureSchema, value: create(QuotaFailureSchema, { violations: [violation] }) },
  ]);
}

/**
 * RESOURCE_EXHAUSTED from a rate limit: a QuotaFailure naming the subject
 * (`clientip:…`, `identity:…`) and `Retry-After` as metadata, which the
 * transports turn into a header (seconds, at least one).
 */
export function rateLimited(subject: string, description: string, retryAfterSeconds: number): ConnectError {
  const err = quotaExceeded(subject, description);
  err.metadata.set("retry-after", String(Math.max(1, Math.ceil(retryAfterSeconds))));
  return err;
}

/**
 * PERMISSION_DENIED. With `reason`, its ErrorInfo names the rule that refused
 * (e.g. GRANT_CEILING) instead of the code; the domain is filled in on the
 * way out like every other ErrorInfo.
 */
export function permissionDenied(description: string, reason?: string): ConnectError {
  const details = reason ? [{ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: "" }) }] : undefined;
  return new ConnectError(`Permission denied: ${clip(description)}`, Code.PermissionDenied, undefined, details);
}

/**
 * UNAUTHENTICATED. Its `www-authenticate` metadata is the RFC 6750 challenge an HTTP answer
 * carries (docs/design.md, "Errors"): `Bearer`, with `error="invalid_token"` when `tokenRefused`
 * (a token was given and not accepted).
 */
export function unauthenticated(description: string, tokenRefused = false): ConnectError {
  return new ConnectError(`Unauthenticated: ${clip(description)}`, Code.Unauthenticated, {
    "www-authenticate": tokenRefused ? BEARER_INVALID_TOKEN : BEARER_CHALLENGE,
  });
}

/** RFC 6750's challenges: no token, and a token that was given and refused. */
export const BEARER_CHALLENGE = "Bearer";
export const BEARER_INVALID_TOKEN = 'Bearer error="invalid_token"';

export function unimplemented(description: string): ConnectError {
  return new ConnectError(`Unimplemented: ${clip(description)}`, Code.Unimplemented);
}

/** Seconds a client is asked to wait before retrying an UNAVAILABLE call. */
const RETRY_AFTER_SECONDS = 2;

/**
 * UNAVAILABLE: the service cannot answer now (its database is unreachable)
 * and the caller should retry; `Retry-After` rides along as metadata, so it
 * reaches Connect and gRPC callers as a header and REST callers too.
 */
export function unavailable(description: string): ConnectError {
  return new ConnectError(`Unavailable: ${clip(description)}`, Code.Unavailable, { "retry-after": String(RETRY_AFTER_SECONDS) });
}

/** INTERNAL without leaking the cause to the caller; the cause is kept for the log. */
export function internalError(cause: unknown): ConnectError {
  return new ConnectError("Internal error", Code.Internal, undefined, undefined, cause);
}

/**
 * Anything thrown, as the error the caller sees: a ConnectError as it is; a
 * value PostgreSQL refused (a data exception or a size limit, which input
 * checks should have caught first) as INVALID_ARGUMENT; a database that
 * cannot be reached as UNAVAILABLE (retry); a transaction the database gave
 * up on (deadlock, serialization) as ABORTED (retry); anything else as
 * INTERNAL, its cause handed to `onInternal` (the log) and never to the
 * caller. Every entry point (RPC interceptor, REST, plain HTTP routes) uses it.
 */
export function toConnectError(thrown: unknown, onInternal: (cause: unknown) => void): ConnectError {
  if (thrown instanceof ConnectError) return thrown;
  if (isDatabaseUnavailable(thrown)) return unavailable("the database cannot be reached; retry shortly");
  if (isTransactionConflict(thrown)) {
    return new ConnectError("Aborted: the change conflicted with a concurrent one; retry it", Code.Aborted);
  }
  if (isDataError(thrown))
    return invalidArgument("request", "contains a value that cannot be stored (too large, out of range or not valid text)");
  onInternal(thrown);
  return internalError(thrown);
}
