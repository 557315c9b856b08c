import { AsyncLocalStorage } from "node:async_hooks";
import { createHash } from "node:crypto";
import { asc, eq } from "drizzle-orm";
import { LRUCache } from "lru-cache";
import * as client from "openid-client";
import type { SecretBox } from "../../crypto/index.js";
import { openClientSecret, organizationOf, schema, type Database } from "../../db/index.js";
import { budgetSpent, type Egress, type EgressBudget, type EgressFetch } from "../../egress/index.js";
import type { OutboundBudgets } from "../outbound-budgets.js";
import { LoginError } from "./login-error.js";
import type { PendingLogin } from "./login-state.js";

const TIMEOUT_SECONDS = 5;
/** What a person whose sign-in met a full budget is told (the log has which budget). */
const BUSY = "too many sign-ins are in progress at the identity provider (or from this address); try again shortly";
/** Discovery documents (and the JWKS openid-client keeps with them) are reused this long. */
const CONFIG_TTL_MS = 10 * 60 * 1000;
const MAX_CACHED_CONFIGS = 1000;
/** A provider whose discovery failed is answered from memory this long, without going out (docs/security.md, "Outbound budgets"). */
export const PROVIDER_FAILURE_TTL_MS = 30 * 1000;

/** An upstream OpenID Connect provider people sign in with. */
export interface UpstreamProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  scopes: string[];
  /** Set when the provider is an organization's IdentityProvider. */
  idp?: { uid: string; groupUid: string; defaultRoleUid: string | null };
}

/** Who signed in, from a verified ID token (and the userinfo endpoint when the token lacks an email). */
export interface SignedInPerson {
  issuer: string;
  subject: string;
  email: string;
  emailVerified: boolean;
  /** Display name: the email, name or preferred_username claim. */
  name: string;
}

/** An organization's identity provider, with what the sign-in shows of it. */
export interface OrganizationProvider {
  provider: UpstreamProvider;
  /** The IdentityProvider's name, as its group's owners wrote it (free text: escape it). */
  providerName: string;
  /** The group the provider belongs to (the `org` of the login link). */
  group: { uid: string; name: string };
  /**
   * Whether the provider is vouched for by its organization's verification: it is held by the
   * organization's root group, marked verified (groups.verified). A subgroup's provider never is.
   */
  verified: boolean;
}

type IdpRow = typeof schema.identityProviders.$inferSelect;

/** True when `url` parses and has the same scheme, host and port as `issuer`. */
function sameOrigin(url: string | undefined, issuer: string): boolean {
  if (!url || !URL.canParse(url)) return false;
  return new URL(url).origin === new URL(issuer).origin;
}

function claimString(claims: Record<string, unknown>, name: string): string {
  const value = claims[name];
  return typeof value === "string" ? value : "";
}

/**
 * The upstream OIDC providers: the global one (configuration) and the
 * organizations' IdentityProviders. Runs the authorization code flow with
 * PKCE, state and nonce through openid-client, whose configuration
 * (discovery) is cached per issuer and client.
 */
export class Upstreams {
  private readonly configs: LRUCache<string, client.Configuration>;
  private readonly inflight = new Map<string, Promise<client.Configuration>>();
  /** Discovery failures, by the same key as `configs`. */
  private readonly failures: LRUCache<string, LoginError>;
  /** The client address the requests of a sign-in step are made for (see clientFetch). */
  private readonly caller = new AsyncLocalStorage<{ address: string | undefined }>();

  constructor(
    private readonly opts: {
      db: Database;
      /** Opens the organizations' client secrets, sealed at rest. */
      secrets: SecretBox;
      global: { issuer: string; clientId: string; clientSecret: string; scopes: string[] } | undefined;
      /** Every request to a provider (discovery, token, userinfo, JWKS) goes through the egress guard. */
      egress: Egress;
      /** On the deployment's sign-in budget, or on the budget of the organization whose provider it is. */
      budgets: Pick<OutboundBudgets, "deploymentSignIn" | "identityProviders" | "forClient">;
      /** `{auth_url}/oauth/callback`. */
      redirectUri: string;
      clock: () => Date;
    },
  ) {
    this.configs = new LRUCache<string, client.Configuration>({
      max: MAX_CACHED_CONFIGS,
      ttl: CONFIG_TTL_MS,
      // The injected clock decides expiry, read at every lookup.
      perf: { now: () => opts.clock().getTime() },
      ttlResolution: 0,
    });
    this.failures = new LRUCache<string, LoginError>({
      max: MAX_CACHED_CONFIGS,
      ttl: PROVIDER_FAILURE_TTL_MS,
      perf: { now: () => opts.clock().getTime() },
      ttlResolution: 0,
    });
  }

  get global(): UpstreamProvider | undefined {
    return this.opts.global;
  }

  /**
   * The identity provider of group `groupUid` (the oldest, when it has
   * several), with what the sign-in shows of it before sending anyone there:
   * its name, the group's name, and whether it is a verified organization's own
   * (docs/security.md, "Signing in at an organization's provider").
   */
  async ofOrganization(groupUid: string): Promise<OrganizationProvider> {
    const t = schema.identityProviders;
    const g = schema.groups;
    const [found] = await this.opts.db
      .select({ row: t, groupName: g.name })
      .from(t)
      .innerJoin(g, eq(g.uid, t.parentUid))
      .where(eq(t.parentUid, groupUid))
      .orderBy(asc(t.createTime), asc(t.uid))
      .limit(1);
    if (!found) throw new LoginError("no_identity_provider", `organization ${groupUid} has no identity provider`);
    // The operator verified the organization, not whatever a subgroup's (delegated) owners set up:
    // only the root group's own providers are vouched for.
    const atRoot = organizationOf(groupUid) === groupUid;
    const [organization] = atRoot ? await this.opts.db.select({ verified: g.verified }).from(g).where(eq(g.uid, groupUid)) : [];
    return {
      provider: this.fromRow(found.row),
      providerName: found.row.name,
      group: { uid: groupUid, name: found.groupName },
      verified: organization?.verified ?? false,
    };
  }

  /** The identity provider a pending login started with. */
  async byUid(idpUid: string): Promise<UpstreamProvider> {
    const [row] = await this.opts.db.select().from(schema.identityProviders).where(eq(schema.identityProviders.uid, idpUid));
    if (!row) throw new LoginError("no_identity_provider", "the organization's identity provider was deleted during the sign-in");
    return this.fromRow(row);
  }

  /** Where to send the browser to sign in at `provider`; `clientAddress`: the socket's peer, whose share any discovery spends. */
  async authorizationUrl(provider: UpstreamProvider, pending: PendingLogin, clientAddress: string | undefined): Promise<string> {
    const config = await this.caller.run({ address: clientAddress }, () => this.configuration(provider));
    return client.buildAuthorizationUrl(config, {
      redirect_uri: this.opts.redirectUri,
      scope: provider.scopes.join(" "),
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await client.calculatePKCECodeChallenge(pending.verifier),
      code_challenge_method: "S256",
    }).href;
  }

  /**
   * Trades the authorization response at `callbackUrl` for tokens and
   * returns who signed in. openid-client checks the state, the issuer, the
   * PKCE verifier, and the ID token's signature, audience, expiry and nonce.
   * Its requests spend the share of `clientAddress` (the socket's peer).
   */
  finish(provider: UpstreamProvider, callbackUrl: URL, pending: PendingLogin, clientAddress: string | undefined): Promise<SignedInPerson> {
    return this.caller.run({ address: clientAddress }, () => this.finishHere(provider, callbackUrl, pending));
  }

  private async finishHere(provider: UpstreamProvider, callbackUrl: URL, pending: PendingLogin): Promise<SignedInPerson> {
    const config = await this.configuration(provider);
    let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
    try {
      tokens = await client.authorizationCodeGrant(config, callbackUrl, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true,
      });
    } catch (e) {
      throw new LoginError("upstream_error", budgetSpent(e) ? BUSY : "the identity provider's answer did not verify", { cause: e });
    }
    const claims = tokens.claims();
    if (!claims) throw new LoginError("upstream_error", "the identity provider returned no ID token");
    let all: Record<string, unknown> = claims;
    if (!claimString(claims, "email") && config.serverMetadata().userinfo_endpoint) {
      try {
        all = { ...(await client.fetchUserInfo(config, tokens.access_token, claims.sub)), ...claims };
      } catch (e) {
        throw new LoginError("upstream_error", budgetSpent(e) ? BUSY : "the identity provider's userinfo failed", { cause: e });
      }
    }
    const email = claimString(all, "email");
    return {
      issuer: claims.iss,
      subject: claims.sub,
      email,
      emailVerified: all["email_verified"] === true,
      name: email || claimString(all, "name") || claimString(all, "preferred_username") || claims.sub,
    };
  }

  private fromRow(row: IdpRow): UpstreamProvider {
    if (!this.opts.egress.permits(row.oidcIssuer)) {
      throw new LoginError(
        "upstream_error",
        "the organization's identity provider has an issuer this server may not contact (https is required, at a public address)",
      );
    }
    return {
      issuer: row.oidcIssuer,
      clientId: row.oidcClientId,
      clientSecret: openClientSecret(this.opts.secrets, row.uid, row.oidcClientSecret),
      scopes: [...new Set(["openid", ...row.oidcAdditionalScopes])],
      idp: { uid: row.uid, groupUid: row.parentUid, defaultRoleUid: row.defaultRoleUid },
    };
  }

  /** The outbound budget `provider`'s requests spend (docs/security.md, "Outbound budgets"). */
  private budgetOf(provider: UpstreamProvider): EgressBudget {
    return provider.idp ? this.opts.budgets.identityProviders(provider.idp.groupUid) : this.opts.budgets.deploymentSignIn();
  }

  /**
   * fetch on `budget`, within the share of the client address the current sign-in step runs for
   * (docs/security.md, "Outbound budgets"): one address cannot hold a whole sign-in budget with
   * callbacks of its own. A configuration is cached per budget and serves everyone, so the
   * address is read at each request rather than bound into it.
   */
  private clientFetch(budget: EgressBudget): EgressFetch {
    return (url, init) => {
      const caller = this.caller.getStore();
      return (caller ? this.opts.budgets.forClient(budget, caller.address) : budget).fetch(url, init);
    };
  }

  private async configuration(provider: UpstreamProvider): Promise<client.Configuration> {
    const secretHash = createHash("sha256").update(provider.clientSecret).digest("base64url");
    const budget = this.budgetOf(provider);
    // The configuration keeps the budget its later requests (token, userinfo, JWKS) spend: one per budget.
    const key = JSON.stringify([provider.issuer, provider.clientId, secretHash, budget.key]);
    const cached = this.configs.get(key);
    if (cached) return cached;
    const failed = this.failures.get(key);
    if (failed) {
      const cause = new Error(`discovery failed within the last ${PROVIDER_FAILURE_TTL_MS / 1000} s; not contacted again yet`, {
        cause: failed,
      });
      throw new LoginError(failed.code, failed.description, { cause });
    }
    let pending = this.inflight.get(key);
    if (!pending) {
      pending = this.discover(provider, budget)
        .catch((e: unknown) => {
          // A spent budget says nothing about the provider: the next sign-in may try it.
          if (e instanceof LoginError && !budgetSpent(e)) this.failures.set(key, e);
          throw e;
        })
        .finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    const config = await pending;
    this.configs.set(key, config);
    return config;
  }

  private async discover(provider: UpstreamProvider, budget: EgressBudget): Promise<client.Configuration> {
    if (!this.opts.egress.permits(provider.issuer))
      throw new LoginError("upstream_error", "the identity provider's issuer may not be contacted");
    const insecure = new URL(provider.issuer).protocol === "http:";
    const execute = insecure ? [client.allowInsecureRequests] : [];
    let discovered: client.Configuration;
    try {
      discovered = await client.discovery(new URL(provider.issuer), provider.clientId, undefined, undefined, {
        timeout: TIMEOUT_SECONDS,
        execute,
        [client.customFetch]: this.clientFetch(budget),
      });
    } catch (e) {
      throw new LoginError("upstream_error", budgetSpent(e) ? BUSY : "the identity provider could not be reached", { cause: e });
    }
    const metadata = discovered.serverMetadata();
    // The browser is sent to the authorization endpoint: a document naming another origin could send it anywhere.
    if (!sameOrigin(metadata.authorization_endpoint, provider.issuer)) {
      const cause = new Error(
        `authorization_endpoint ${String(metadata.authorization_endpoint).slice(0, 200)} is not on the origin of issuer ${provider.issuer}`,
      );
      throw new LoginError("upstream_error", "the identity provider's sign-in page is not at its issuer's address", { cause });
    }
    // client_secret_basic is the default method when the provider names none.
    const methods = metadata.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
    const auth = !provider.clientSecret
      ? client.None()
      : methods.includes("client_secret_basic")
        ? client.ClientSecretBasic(provider.clientSecret)
        : client.ClientSecretPost(provider.clientSecret);
    const config = new client.Configuration(metadata, provider.clientId, undefined, auth);
    config.timeout = TIMEOUT_SECONDS;
    config[client.customFetch] = this.clientFetch(budget);
    for (const apply of execute) apply(config);
    return config;
  }
}
