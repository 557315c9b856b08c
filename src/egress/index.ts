export {
  Egress,
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_TIMEOUT_MS,
  type EgressBudget,
  type EgressFetch,
  type EgressOptions,
  type EgressRequestInit,
} from "./egress.js";
export { EgressError, budgetSpent, type EgressFailure } from "./egress-error.js";
export { addressAllowed, addressRange } from "./address-policy.js";
export { checkUrl, type CheckedUrl } from "./url-policy.js";
export type { PinnedConnect, PinnedTarget, Resolve } from "./pinned-connect.js";
