import type { HandlerContext } from "@connectrpc/connect";
import { permissionDenied } from "../errors/index.js";
import { grantsKey } from "./authorizer.js";
import type { Grants } from "./grants.js";

/** The ErrorInfo reason of a refusal by the grant ceiling. */
export const GRANT_CEILING = "GRANT_CEILING";

/** The caller's grants, as the authorization interceptor loaded them; none (an unchecked path) fails closed. */
export function callerGrants(context: HandlerContext): Grants {
  const grants = context.values.get(grantsKey);
  if (!grants) throw permissionDenied("the caller's grants are unknown", GRANT_CEILING);
  return grants;
}

/**
 * The grant ceiling (docs/security.md): nobody hands out what they do not
 * hold. Whatever would let someone exercise `capabilities` at `groupPath`
 * (binding a role, inviting with it, an IdP's default role, a custom role's
 * capabilities, who may assume an identity) needs the caller to hold every
 * one of them there. `what` says which rule refused. `groupPath` "" is the
 * root: only root bindings hold anything there.
 */
export function assertWithinCeiling(grants: Grants, capabilities: Iterable<string>, groupPath: string, what: string): void {
  const missing = grants.missingAt(capabilities, groupPath);
  if (missing.length) {
    const listed = missing.length > 3 ? `${missing.slice(0, 3).join(", ")} and ${missing.length - 3} more` : missing.join(", ");
    const where = groupPath === "" ? "the root" : groupPath;
    throw permissionDenied(`${what} would grant ${listed} at ${where}, which the caller does not hold there`, GRANT_CEILING);
  }
}
