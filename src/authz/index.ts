export { CAPABILITIES, BUILT_IN_ROLES, isCapability, isBuiltInRole, type BuiltInRole } from "./capabilities.js";
