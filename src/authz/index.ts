export { CAPABILITIES, BUILT_IN_ROLES, isCapability, isBuiltInRole, type BuiltInRole } from "./capabilities.js";
export { authorizationInterceptor, declaredAuthorization, grantsKey, type OrgCreationPolicy } from "./authorization-interceptor.js";
export { Grants, type Grant } from "./grants.js";
export { GrantsCache, GRANTS_CHANGED_CHANNEL } from "./grants-cache.js";
export { grantRole } from "./grant-role.js";
export { assertWithinCeiling, callerGrants, GRANT_CEILING } from "./grant-ceiling.js";
