import { create, createRegistry, fromBinary, toJson, type JsonObject } from "@bufbuild/protobuf";
import { anyPack, AnySchema, type Any } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectError } from "@connectrpc/connect";
import { CodeSchema } from "../../gen/google/rpc/code_pb.js";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { StatusSchema, type Status } from "../../gen/google/rpc/status_pb.js";

const detailRegistry = createRegistry(file_google_rpc_error_details);

/** `Code.InvalidArgument` → `"INVALID_ARGUMENT"` (the google.rpc.Code name). */
export function codeName(code: Code): string {
  return CodeSchema.values.find((v) => v.number === code)?.name ?? "UNKNOWN";
}

// The standard gRPC → HTTP mapping (google/rpc/code.proto).
const HTTP_STATUS: Record<number, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 504,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

export function httpStatusFromCode(code: Code): number {
  return HTTP_STATUS[code] ?? 500;
}

function detailToAny(detail: ConnectError["details"][number]): Any {
  if ("desc" in detail) {
    return anyPack(detail.desc, create(detail.desc, detail.value));
  }
  return create(AnySchema, { typeUrl: `type.googleapis.com/${detail.type}`, value: detail.value });
}

/** The google.rpc.Status of an error: code, raw message and every detail as Any. */
export function toStatus(err: ConnectError): Status {
  return create(StatusSchema, {
    code: err.code,
    message: err.rawMessage,
    details: err.details.map(detailToAny),
  });
}

/** `{"code": 3, "message": "...", "details": [{"@type": "...", ...}]}` for REST. */
export function toStatusJson(err: ConnectError): JsonObject {
  const json = toJson(StatusSchema, toStatus(err), { registry: detailRegistry }) as JsonObject;
  return { code: err.code, message: err.rawMessage, details: json["details"] ?? [] };
}

/** Decodes a binary google.rpc.Status (as carried in grpc-status-details-bin). */
export function statusFromBinary(bytes: Uint8Array): Status {
  return fromBinary(StatusSchema, bytes);
}
