import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from "jose";
import { LRUCache } from "lru-cache";
import type { Egress } from "../egress/index.js";

/** Keys are reused this long before they are fetched again. */
const KEYS_TTL_MS = 10 * 60 * 1000;
/** An unknown kid may refetch the keys at most this often per issuer. */
const REFETCH_COOLDOWN_MS = 30 * 1000;
/** Issuers whose keys are kept; the least recently used go first. */
const MAX_CACHED_ISSUERS = 1000;
/** Asymmetric algorithms only: `none` and shared-secret HS* tokens are never accepted. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

interface IssuerKeys {
  jwks: JSONWebKeySet;
  fetchedAt: number;
}

export interface OidcIssuerOptions {
  /** Every fetch (discovery, JWKS) goes through the egress guard. */
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
 * Callers decide which issuer to trust; this module only ever contacts the
 * issuer it is given.
 */
export class OidcIssuers {
  private readonly keys: LRUCache<string, IssuerKeys>;
  private readonly pending = new Map<string, Promise<IssuerKeys>>();

  constructor(private readonly opts: OidcIssuerOptions) {
    this.keys = new LRUCache<string, IssuerKeys>({
      max: MAX_CACHED_ISSUERS,
      ttl: KEYS_TTL_MS,
      // The injected clock decides expiry, read at every lookup.
      perf: { now: () => opts.clock().getTime() },
      ttlResolution: 0,
    });
  }

  /** Verifies signature, `iss` and expiry (and `aud` when given); throws on any failure. */
  async verify(token: string, issuer: string, audience?: string): Promise<JWTPayload> {
    // The guard's refusal says why (for the log); the caller answers generically.
    if (!issuerShaped(this.opts.egress.checkUrl(issuer))) throw new Error("issuer has a query or fragment");
    const check = async (keys: IssuerKeys) =>
      (
        await jwtVerify(token, createLocalJWKSet(keys.jwks), {
          issuer,
          algorithms: ALGORITHMS,
          currentDate: this.opts.clock(),
          clockTolerance: 30,
          requiredClaims: ["iss", "sub", "exp"],
          ...(audience ? { audience } : {}),
        })
      ).payload;
    const keys = await this.issuerKeys(issuer, false);
    try {
      return await check(keys);
    } catch (e) {
      // The issuer may have rotated: fetch once more, rate-limited.
      const now = this.opts.clock().getTime();
      if ((e as { code?: string }).code !== "ERR_JWKS_NO_MATCHING_KEY" || now - keys.fetchedAt < REFETCH_COOLDOWN_MS) throw e;
      return check(await this.issuerKeys(issuer, true));
    }
  }

  private async issuerKeys(issuer: string, refresh: boolean): Promise<IssuerKeys> {
    const cached = refresh ? undefined : this.keys.get(issuer);
    if (cached) return cached;
    let inflight = this.pending.get(issuer);
    if (!inflight) {
      inflight = this.fetchKeys(issuer).finally(() => this.pending.delete(issuer));
      this.pending.set(issuer, inflight);
    }
    const keys = await inflight;
    this.keys.set(issuer, keys);
    return keys;
  }

  private async fetchKeys(issuer: string): Promise<IssuerKeys> {
    const discovery = (await this.opts.egress.fetchJson(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`)) as {
      issuer?: unknown;
      jwks_uri?: unknown;
    } | null;
    if (discovery?.issuer !== issuer) throw new Error("discovery document names another issuer");
    if (typeof discovery.jwks_uri !== "string") throw new Error("discovery document has no jwks_uri");
    const jwks = (await this.opts.egress.fetchJson(discovery.jwks_uri)) as JSONWebKeySet | null;
    if (!jwks || !Array.isArray(jwks.keys)) throw new Error("bad JWKS");
    return { jwks, fetchedAt: this.opts.clock().getTime() };
  }
}
