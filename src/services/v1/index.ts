import { apiService, type ApiService } from "../api-service.js";
import { v1Impl } from "./adapter.js";
import { V1_TABLE } from "./table.js";

/** The v1 API (docs/design.md, "v1 beside v2"): adapters over the v2 implementations, so the same store and behaviour. */
export const V1_API_SERVICES: ApiService[] = V1_TABLE.map((row) => apiService(row.v1, (ctx) => v1Impl(row, ctx)));
