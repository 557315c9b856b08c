export { CAPABILITIES, BUILT_IN_ROLES, UNDECLARED, byCatalogOrder, isCapability, isBuiltInRole, type BuiltInRole } from "./capabilities.js";
export { CAPABILITY_ENUM_NAMES, capabilityNamed, dottedCapabilities, enumCapabilities, enumNameFor } from "./capability-names.js";
