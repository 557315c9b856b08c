// Role bindings (docs/design.md, "Resources" and "Events"): one owner for how they are made (by the API
// and by the server), shown (hydrated once per answer), recorded and removed. Below both `auth`
// (sign-in, bootstrap) and `services` (the RPC handlers) in the layer order (docs/architecture.md).
export { createBindings, grantRole, type NewBinding, type Recording, type ServerGrant } from "./create.js";
export { hydratedBinding, hydratedRootBinding, hydrateRoleBindings, hydrateRootRoleBindings, storedBindingMapping } from "./messages.js";
export { ROOT } from "./place.js";
export { assertIdentityBindable, assertIdentityVisible, assertRoleVisible, lockGroup } from "./references.js";
export { countRoleBindings, removeBindingsWith } from "./removal.js";
export {
  checkNewRole,
  createRequested,
  createRootRequested,
  groupBindingResource,
  rootBindingResource,
  type Creating,
} from "./requests.js";
