export { CAPABILITIES, BUILT_IN_ROLES, UNDECLARED, byCatalogOrder, isCapability, isBuiltInRole, type BuiltInRole } from "./capabilities.js";
