import type { UpstreamProvider } from "./upstream.js";

/**
 * Which provider signed the person in. It decides whose word counts: the
 * deployment's own upstream (PLATFORM_OIDC_*), an organization's
 * IdentityProvider (trusted for that organization only), or the development
 * provider (which checks nothing).
 */
export type SignInVia = { kind: "global" } | { kind: "organization"; idp: NonNullable<UpstreamProvider["idp"]> } | { kind: "development" };

/** The sign-in through `provider`: an organization's when it is an IdentityProvider, else the global upstream. */
export function viaProvider(provider: UpstreamProvider): SignInVia {
  return provider.idp ? { kind: "organization", idp: provider.idp } : { kind: "global" };
}
