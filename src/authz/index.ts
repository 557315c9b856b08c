export {
  Authorizer,
  grantsKey,
  type AuthorizedCall,
  type OrgCreationPolicy,
  type StreamAccess,
} from "./authorizer.js";
export { Grants, type Grant } from "./grants.js";
export { GrantsCache, GRANTS_CHANGED_CHANNEL } from "./grants-cache.js";
export { assertWithinCeiling, callerGrants, GRANT_CEILING } from "./grant-ceiling.js";
