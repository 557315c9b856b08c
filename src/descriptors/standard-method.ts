import type { DescMethod } from "@bufbuild/protobuf";

/**
 * The standard methods of Google's API design guide (AIP-131..135 and the
 * batch ones, AIP-231..235), which the protos follow: what a method is, told
 * by its name (`ListGroups`, `BatchCreateRoleBindings`). Any other method
 * (`WatchEvents`, `ImportAdvisories`) is custom.
 */
export type StandardMethod = "List" | "Get" | "Create" | "Update" | "Delete" | "BatchGet" | "BatchCreate" | "BatchUpdate" | "BatchDelete";

// The verb, then the resource's name (a capital): `Listing` is no List.
const STANDARD = /^(List|Get|Create|Update|Delete|Batch(?:Get|Create|Update|Delete))[A-Z]/;

const known = new WeakMap<DescMethod, StandardMethod | undefined>();

/**
 * Which standard method `method` is, or undefined for a custom one. Standard
 * methods are unary. The one classification the resource derivation, v1, the
 * CLI, the request check and the tests use.
 */
export function standardMethodOf(method: DescMethod): StandardMethod | undefined {
  if (known.has(method)) return known.get(method);
  const standard = method.methodKind === "unary" ? (STANDARD.exec(method.name)?.[1] as StandardMethod | undefined) : undefined;
  known.set(method, standard);
  return standard;
}
