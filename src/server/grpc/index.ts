export { registerReflection } from "./reflection.js";
export { registerHealth } from "./health.js";
export type { HealthSource, ServingStatus } from "./health-source.js";
