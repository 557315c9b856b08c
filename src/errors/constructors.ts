import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  BadRequestSchema,
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

export function permissionDenied(description: string): ConnectError {
  return new ConnectError(`Permission denied: ${description}`, Code.PermissionDenied);
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
