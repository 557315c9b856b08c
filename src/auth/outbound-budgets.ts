import { organizationOf } from "../db/index.js";
import type { Egress, EgressBudget } from "../egress/index.js";
import { addressKey } from "./exchange-limits.js";

export interface OutboundLimits {
  /** The deployment's upstream sign-in provider: held for it alone. */
  upstreamInFlight: number;
  /** One organization's identity providers; and, apart, its identities' issuers. */
  organizationInFlight: number;
  /** All organizations' identity providers together; and, apart, all their identities' issuers. */
  organizationsInFlight: number;
  /** One client address's share of each sign-in budget (the deployment's, each organization's). */
  signInInFlightPerAddress: number;
}

/**
 * The shares of the egress guard that sign-in and the token exchange spend
 * (docs/security.md, "Outbound budgets"). Three budgets side by side, none
 * able to spend another's: the deployment's own sign-in provider; the
 * organizations' identity providers, each organization within its share;
 * and the issuers the token exchange contacts, again each organization
 * within its share. The exchange is anonymous, so its callers can only ever
 * exhaust the issuers' budget of the organization whose identity they name.
 * Sign-in is anonymous too until its callback: within each sign-in budget,
 * one client address holds a small share of its own (forClient).
 */
export class OutboundBudgets {
  private readonly upstream: EgressBudget;
  private readonly idps: EgressBudget;
  private readonly issuers: EgressBudget;

  constructor(
    egress: Egress,
    private readonly limits: OutboundLimits,
  ) {
    this.upstream = egress.budget("upstream", limits.upstreamInFlight);
    this.idps = egress.budget("idp", limits.organizationsInFlight);
    this.issuers = egress.budget("issuers", limits.organizationsInFlight);
  }

  /** The guard's own cap: every budget full at once, and not one request more. */
  static totalInFlight(limits: OutboundLimits): number {
    return limits.upstreamInFlight + 2 * limits.organizationsInFlight;
  }

  /** The deployment's upstream sign-in provider (PLATFORM_OIDC_ISSUER). */
  deploymentSignIn(): EgressBudget {
    return this.upstream;
  }

  /**
   * `budget` (a sign-in budget) as spent for the client at `address` (the
   * socket's peer): at most PLATFORM_LOGIN_IN_FLIGHT_PER_ADDRESS of its
   * requests in flight for that address, keyed as the rate limits key it.
   */
  forClient(budget: EgressBudget, address: string | undefined): EgressBudget {
    return budget.within(`client:${addressKey(address)}`, this.limits.signInInFlightPerAddress);
  }

  /** The identity providers of the organization holding `uid`. */
  identityProviders(uid: string): EgressBudget {
    return this.idps.within(organizationOf(uid), this.limits.organizationInFlight);
  }

  /**
   * The issuers of the organization holding `uid` (an identity's group). Per
   * organization rather than per identity: identities cost their
   * organization nothing to make, so a budget each would let one
   * organization take as many shares as it likes.
   */
  exchangeIssuers(uid: string): EgressBudget {
    return this.issuers.within(organizationOf(uid), this.limits.organizationInFlight);
  }
}
