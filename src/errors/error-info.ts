import { create } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { codeName } from "./status.js";

const ERROR_INFO_TYPE = ErrorInfoSchema.typeName;

/**
 * The ErrorInfo domain for a fully qualified service name:
 * `platform.iam.v2beta1.GroupsService` → `iam.<serviceDomain>`, `platform.registry.v2beta1.ReposService`
 * → `registry.<serviceDomain>` (docs/design.md, "Errors").
 */
export function errorDomainForService(serviceTypeName: string, serviceDomain: string): string {
  const parts = serviceTypeName.split(".");
  const area = parts[0] === "platform" && parts[1] ? parts[1] : (parts[0] ?? "platform");
  return `${area}.${serviceDomain}`;
}

/**
 * Adds `ErrorInfo{reason: <CODE_NAME>, domain}` unless the error already has
 * one; an ErrorInfo made without a domain (a specific reason) gets `domain`.
 */
export function withErrorInfo(err: ConnectError, domain: string): ConnectError {
  const existing = err.details.find((d) => ("desc" in d ? d.desc.typeName : d.type) === ERROR_INFO_TYPE);
  if (existing && "desc" in existing && existing.desc === ErrorInfoSchema && !existing.value.domain) {
    (existing.value as { domain?: string }).domain = domain;
  }
  if (!existing) {
    err.details.push({
      desc: ErrorInfoSchema,
      value: create(ErrorInfoSchema, { reason: codeName(err.code), domain }),
    });
  }
  return err;
}
