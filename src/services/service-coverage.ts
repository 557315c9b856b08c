import type { DescService } from "@bufbuild/protobuf";
import type { ApiService } from "./api-service.js";

/**
 * Throws unless `services` implements exactly the services of `declared` (gen/api-index.ts):
 * a service added to the protos without an implementation, or one implemented but no longer
 * declared, stops the server at start instead of answering UNIMPLEMENTED
 * (docs/design.md, "Tokens and access").
 */
export function assertEveryServiceImplemented(declared: readonly DescService[], services: readonly ApiService[]): void {
  const names = services.map((s) => s.service.typeName);
  const implemented = new Set(names);
  const inProtos = new Set(declared.map((s) => s.typeName));
  const missing = [...inProtos].filter((n) => !implemented.has(n)).sort();
  const extra = [...implemented].filter((n) => !inProtos.has(n)).sort();
  const twice = [...new Set(names.filter((n, i) => names.indexOf(n) !== i))].sort();
  const problems = [
    ...(missing.length ? [`no implementation for ${missing.join(", ")}`] : []),
    ...(extra.length ? [`not in proto/platform: ${extra.join(", ")}`] : []),
    ...(twice.length ? [`implemented twice: ${twice.join(", ")}`] : []),
  ];
  if (problems.length) throw new Error(`API_SERVICES does not match the protos: ${problems.join("; ")}`);
}
