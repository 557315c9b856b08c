import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from "jose";
import { LRUCache } from "lru-cache";
import { budgetSpent, type Egress, type EgressBudget } from "../egress/index.js";

/** Keys are reused this long before they are fetched again. */
const KEYS_TTL_MS = 10 * 60 * 1000;
/** An unknown kid may refetch the keys at most this often per issuer. */
const REFETCH_COOLDOWN_MS = 30 * 1000;
/** Issuers whose keys are kept; the least recently used go first. */
const MAX_CACHED_ISSUERS = 1000;
/** A failed fetch of an issuer's discovery or keys is answered from memory this long, without going out. */
export const ISSUER_FAILURE_TTL_MS = 30 * 1000;
/** Issuers whose last failure is kept; the least recently used go first. */
const MAX_FAILED_ISSUERS = 1000;
/** Asymmetric algorithms only: `none` and shared-secret HS* tokens are never accepted. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

interface IssuerKeys {
  jwks: JSONWebKeySet;
  fetchedAt: number;
}

export interface OidcIssuerOptions {
  /** Every fetch (discovery, JWKS) goes through the egress guard, on the budget the caller names. */
  egress: Egress;
  clock: () => Date;
}

/** An OIDC issuer identifier carries no query or fragment (OpenID Connect Discovery §2). */
function issuerShaped(url: URL): boolean {
  return !url.search && !url.hash;
}

/**
 * Verifies tokens from external OIDC issuers (workload identity providers):
 * discovery, then JWKS, both through the egress guard (public addresses,
 * timeout, size cap), with the keys cached per issuer in a bounded cache.
 * A failed fetch is remembered per issuer for ISSUER_FAILURE_TTL_MS, so an
 * issuer that is slow, unreachable or broken costs one outbound attempt per
 * period however often it is named (docs/security.md, "Outbound budgets").
 * Callers decide which issuer to trust; this module only ever contacts the
 * issuer it is given.
 */
export class OidcIssuers {
  private readonly keys: LRUCache<string, IssuerKeys>;
  private readonly failures: LRUCache<string, string>;
  private readonly pending = new Map<string, Promise<IssuerKeys>>();

  constructor(private readonly opts: OidcIssuerOptions) {
    this.failures = new LRUCache<string, string>({
      max: MAX_FAILED_ISSUERS,
      ttl: ISSUER_FAILURE_TTL_MS,
      perf: { now: () => opts.clock().getTime() },
      ttlResolution: 0,
    });
    this.keys = new LRUCache<string, IssuerKeys>({
      max: MAX_CACHED_ISSUERS,
      ttl: KEYS_TTL_MS,
      // The injected clock decides expiry, read at every lookup.
      perf: { now: () => opts.clock().getTime() },
      ttlResolution: 0,
    });
  }

  /**
   * Verifies signature, `iss` and expiry (and `aud` when given); throws on any failure. Keys not
   * cached are fetched on `budget`.
   */
  async verify(token: string, issuer: string, budget: EgressBudget, audience?: string): Promise<JWTPayload> {
    // The guard's refusal says why (for the log); the caller answers generically.
    if (!issuerShaped(this.opts.egress.checkUrl(issuer))) throw new Error("issuer has a query or fragment");
    const keys = await this.issuerKeys(issuer, budget, false);
    try {
      return await this.check(token, issuer, keys, audience);
    } catch (e) {
      // The issuer may have rotated: fetch once more, rate-limited.
      const now = this.opts.clock().getTime();
      if ((e as { code?: string }).code !== "ERR_JWKS_NO_MATCHING_KEY" || now - keys.fetchedAt < REFETCH_COOLDOWN_MS) throw e;
      return this.check(token, issuer, await this.issuerKeys(issuer, budget, true), audience);
    }
  }

  /** True when `issuer`'s keys are cached: verifyCached can decide a token of it without going out. */
  hasKeys(issuer: string): boolean {
    return this.keys.has(issuer);
  }

  /**
   * verify with the keys already cached, never going out (not even for an unknown kid); throws on
   * any failure, and when `issuer`'s keys are not cached.
   */
  async verifyCached(token: string, issuer: string, audience?: string): Promise<JWTPayload> {
    const keys = this.keys.get(issuer);
    if (!keys) throw new Error("the issuer's keys are not cached (not contacted: the identity is over its limit of refused exchanges)");
    return this.check(token, issuer, keys, audience);
  }

  private async check(token: string, issuer: string, keys: IssuerKeys, audience: string | undefined): Promise<JWTPayload> {
    const verified = await jwtVerify(token, createLocalJWKSet(keys.jwks), {
      issuer,
      algorithms: ALGORITHMS,
      currentDate: this.opts.clock(),
      clockTolerance: 30,
      requiredClaims: ["iss", "sub", "exp"],
      ...(audience ? { audience } : {}),
    });
    return verified.payload;
  }

  private async issuerKeys(issuer: string, budget: EgressBudget, refresh: boolean): Promise<IssuerKeys> {
    const cached = refresh ? undefined : this.keys.get(issuer);
    if (cached) return cached;
    const failed = this.failures.get(issuer);
    if (failed !== undefined)
      throw new Error(`the issuer failed within the last ${ISSUER_FAILURE_TTL_MS / 1000} s (not contacted again yet): ${failed}`);
    let inflight = this.pending.get(issuer);
    if (!inflight) {
      inflight = this.fetchKeys(issuer, budget)
        .catch((e: unknown) => {
          // A budget that was full says nothing about the issuer: the next call may try it.
          if (!budgetSpent(e)) this.failures.set(issuer, e instanceof Error ? e.message : String(e));
          throw e;
        })
        .finally(() => this.pending.delete(issuer));
      this.pending.set(issuer, inflight);
    }
    const keys = await inflight;
    this.keys.set(issuer, keys);
    return keys;
  }

  private async fetchKeys(issuer: string, budget: EgressBudget): Promise<IssuerKeys> {
    const discovery = (await budget.fetchJson(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`)) as {
      issuer?: unknown;
      jwks_uri?: unknown;
    } | null;
    if (discovery?.issuer !== issuer) throw new Error("discovery document names another issuer");
    if (typeof discovery.jwks_uri !== "string") throw new Error("discovery document has no jwks_uri");
    const jwks = (await budget.fetchJson(discovery.jwks_uri)) as JSONWebKeySet | null;
    if (!jwks || !Array.isArray(jwks.keys)) throw new Error("bad JWKS");
    return { jwks, fetchedAt: this.opts.clock().getTime() };
  }
}
