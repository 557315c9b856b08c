import { create } from "@bufbuild/protobuf";
import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { codeName } from "./status.js";
import { internalError } from "./constructors.js";

const ERROR_INFO_TYPE = ErrorInfoSchema.typeName;

function hasErrorInfo(err: ConnectError): boolean {
  return err.details.some((d) => ("desc" in d ? d.desc.typeName : d.type) === ERROR_INFO_TYPE);
}

/**
 * The ErrorInfo domain for a fully qualified service name:
 * `platform.iam.v2beta1.GroupsService` → `iam.<serviceDomain>`.
 */
export function errorDomainForService(serviceTypeName: string, serviceDomain: string): string {
  const parts = serviceTypeName.split(".");
  const area = parts[0] === "platform" && parts[1] ? parts[1] : (parts[0] ?? "platform");
  return `${area}.${serviceDomain}`;
}

/** Adds `ErrorInfo{reason: <CODE_NAME>, domain}` unless the error already has one. */
export function withErrorInfo(err: ConnectError, domain: string): ConnectError {
  if (!hasErrorInfo(err)) {
    err.details.push({
      desc: ErrorInfoSchema,
      value: create(ErrorInfoSchema, { reason: codeName(err.code), domain }),
    });
  }
  return err;
}

/**
 * Every error leaving an RPC carries ErrorInfo; anything that is not a
 * ConnectError is an internal error whose cause goes to `onInternal` (the log)
 * and never to the caller.
 */
export function errorInfoInterceptor(serviceDomain: string, onInternal: (cause: unknown) => void): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (e) {
      let err: ConnectError;
      if (e instanceof ConnectError) {
        err = e;
      } else {
        onInternal(e);
        err = internalError(e);
      }
      throw withErrorInfo(err, errorDomainForService(req.service.typeName, serviceDomain));
    }
  };
}
