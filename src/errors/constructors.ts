import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { isDataError } from "../db/pg-errors.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  PreconditionFailureSchema,
  ResourceInfoSchema,
} from "../../gen/google/rpc/error_details_pb.js";

export interface FieldViolation {
  field: string;
  description: string;
}

export function invalidArgument(field: string, description: string): ConnectError {
  return invalidArguments([{ field, description }]);
}

/** INVALID_ARGUMENT with one BadRequest violation per field; the message names the first. */
export function invalidArguments(violations: FieldViolation[]): ConnectError {
  const first = violations[0] ?? { field: "request", description: "is invalid" };
  return new ConnectError(`Invalid argument: ${first.field}: ${first.description}`, Code.InvalidArgument, undefined, [
    { desc: BadRequestSchema, value: create(BadRequestSchema, { fieldViolations: violations }) },
  ]);
}

/** FAILED_PRECONDITION with a PreconditionFailure violation of `type` (e.g. RESOURCE_NOT_EMPTY). */
export function failedPrecondition(type: string, description: string, subject = ""): ConnectError {
  return new ConnectError(`Precondition failed: ${description}`, Code.FailedPrecondition, undefined, [
    {
      desc: PreconditionFailureSchema,
      value: create(PreconditionFailureSchema, { violations: [{ type, subject, description }] }),
    },
  ]);
}

/** NOT_FOUND naming the resource type and uid that was looked for. */
export function notFound(resourceType: string, resourceName: string): ConnectError {
  return new ConnectError(`Not found: ${resourceType} ${resourceName}`, Code.NotFound, undefined, [
    {
      desc: ResourceInfoSchema,
      value: create(ResourceInfoSchema, { resourceType, resourceName, description: `${resourceType} does not exist` }),
    },
  ]);
}

/** ALREADY_EXISTS when a unique name collides. */
export function alreadyExists(resourceType: string, resourceName: string, description: string): ConnectError {
  return new ConnectError(`Already exists: ${description}`, Code.AlreadyExists, undefined, [
    { desc: ResourceInfoSchema, value: create(ResourceInfoSchema, { resourceType, resourceName, description }) },
  ]);
}

/** OUT_OF_RANGE: the request is valid but asks for more than the service gives (e.g. an unpaged v1 List over its cap). */
export function outOfRange(description: string): ConnectError {
  return new ConnectError(`Out of range: ${description}`, Code.OutOfRange);
}

/**
 * PERMISSION_DENIED. With `reason`, its ErrorInfo names the rule that refused
 * (e.g. GRANT_CEILING) instead of the code; the domain is filled in on the
 * way out like every other ErrorInfo.
 */
export function permissionDenied(description: string, reason?: string): ConnectError {
  const details = reason ? [{ desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason, domain: "" }) }] : undefined;
  return new ConnectError(`Permission denied: ${description}`, Code.PermissionDenied, undefined, details);
}

export function unauthenticated(description: string): ConnectError {
  return new ConnectError(`Unauthenticated: ${description}`, Code.Unauthenticated);
}

export function unimplemented(description: string): ConnectError {
  return new ConnectError(`Unimplemented: ${description}`, Code.Unimplemented);
}

/** INTERNAL without leaking the cause to the caller; the cause is kept for the log. */
export function internalError(cause: unknown): ConnectError {
  return new ConnectError("Internal error", Code.Internal, undefined, undefined, cause);
}

/**
 * Anything thrown, as the error the caller sees: a ConnectError as it is; a
 * value PostgreSQL refused (a data exception or a size limit, which input
 * checks should have caught first) as INVALID_ARGUMENT; anything else as
 * INTERNAL, its cause handed to `onInternal` (the log) and never to the
 * caller. Every entry point (RPC interceptor, REST, plain HTTP routes) uses it.
 */
export function toConnectError(thrown: unknown, onInternal: (cause: unknown) => void): ConnectError {
  if (thrown instanceof ConnectError) return thrown;
  if (isDataError(thrown)) return invalidArgument("request", "contains a value that cannot be stored (too large, out of range or not valid text)");
  onInternal(thrown);
  return internalError(thrown);
}
