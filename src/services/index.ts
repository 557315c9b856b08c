import { API_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import type { ApiService } from "./api-service.js";
import { assertEveryServiceImplemented } from "./service-coverage.js";
import { loadImplementations } from "./service-modules.js";
import { V1_API_SERVICES } from "./v1/index.js";

export type { ServiceContext } from "./context.js";
export type { ApiService, BoundService } from "./api-service.js";
export { ResourceCatalog } from "./resource-catalog.js";

const servedByV1 = new Set(V1_API_SERVICES.map((s) => s.service));

/**
 * Every API service the server exposes, in the order reflection and the OpenAPI document list
 * them: the protos' services (gen/api-index.ts: by file name, then declaration), each from the
 * module its proto file names (service-modules.ts), then the v1 services.
 */
export const API_SERVICES: readonly ApiService[] = [
  ...(await loadImplementations(API_SERVICE_DESCRIPTORS.filter((s) => !servedByV1.has(s)))),
  ...V1_API_SERVICES,
];

// At load, so at start: a proto service without an implementation fails loudly (docs/design.md, "Tokens and access").
assertEveryServiceImplemented(API_SERVICE_DESCRIPTORS, API_SERVICES);
