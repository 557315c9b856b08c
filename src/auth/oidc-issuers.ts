import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from "jose";
import { fetchJsonLimited } from "./limited-fetch.js";

const FETCH_TIMEOUT_MS = 5_000;
const MAX_DOCUMENT_BYTES = 256 * 1024;
/** Keys are reused this long before they are fetched again. */
const KEYS_TTL_MS = 10 * 60 * 1000;
/** An unknown kid may refetch the keys at most this often per issuer. */
const REFETCH_COOLDOWN_MS = 30 * 1000;
/** Asymmetric algorithms only: `none` and shared-secret HS* tokens are never accepted. */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"];

interface IssuerKeys {
  jwks: JSONWebKeySet;
  fetchedAt: number;
}

export interface OidcIssuerOptions {
  allowInsecure: boolean;
  clock: () => Date;
}

/**
 * Verifies tokens from external OIDC issuers (workload identity providers):
 * discovery, then JWKS, both with a timeout and a size cap, with the keys
 * cached per issuer. Callers decide which issuer to trust; this module only
 * ever contacts the issuer it is given.
 */
export class OidcIssuers {
  private readonly keys = new Map<string, IssuerKeys>();
  private readonly pending = new Map<string, Promise<IssuerKeys>>();

  constructor(private readonly opts: OidcIssuerOptions) {}

  /** True when `issuer` is a URL this server may contact. */
  allowed(issuer: string): boolean {
    let url: URL;
    try {
      url = new URL(issuer);
    } catch {
      return false;
    }
    if (url.username || url.password || url.search || url.hash) return false;
    return url.protocol === "https:" || (this.opts.allowInsecure && url.protocol === "http:");
  }

  /** Verifies signature, `iss` and expiry (and `aud` when given); throws on any failure. */
  async verify(token: string, issuer: string, audience?: string): Promise<JWTPayload> {
    if (!this.allowed(issuer)) throw new Error("issuer not allowed");
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
    const cached = this.keys.get(issuer);
    if (!refresh && cached && this.opts.clock().getTime() - cached.fetchedAt < KEYS_TTL_MS) return cached;
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
    const limits = { timeoutMs: FETCH_TIMEOUT_MS, maxBytes: MAX_DOCUMENT_BYTES };
    const discovery = (await fetchJsonLimited(`${issuer.replace(/\/$/, "")}/.well-known/openid-configuration`, limits)) as {
      issuer?: unknown;
      jwks_uri?: unknown;
    };
    if (discovery.issuer !== issuer) throw new Error("discovery document names another issuer");
    if (typeof discovery.jwks_uri !== "string" || !this.allowed(discovery.jwks_uri)) throw new Error("bad jwks_uri");
    const jwks = (await fetchJsonLimited(discovery.jwks_uri, limits)) as JSONWebKeySet;
    if (!jwks || !Array.isArray(jwks.keys)) throw new Error("bad JWKS");
    return { jwks, fetchedAt: this.opts.clock().getTime() };
  }
}
