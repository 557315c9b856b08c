// The only place that builds error details. Services throw these; an
// interceptor adds ErrorInfo to every error on its way out, and the REST
// layer renders them as google.rpc.Status JSON.
export {
  invalidArgument,
  invalidArguments,
  required,
  REQUIRED_REASON,
  BEARER_CHALLENGE,
  BEARER_INVALID_TOKEN,
  failedPrecondition,
  notFound,
  alreadyExists,
  permissionDenied,
  outOfRange,
  resourceExhausted,
  quotaExceeded,
  rateLimited,
  unauthenticated,
  unimplemented,
  internalError,
  unavailable,
  toConnectError,
  clip,
  type FieldViolation,
} from "./constructors.js";
export { withErrorInfo, errorDomainForService } from "./error-info.js";
export { toStatus, toStatusJson, httpStatusFromCode, codeName } from "./status.js";
export { isUniqueViolation, isForeignKeyViolation } from "./pg-errors.js";
