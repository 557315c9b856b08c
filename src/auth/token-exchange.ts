import { withoutTrailingSlash } from "../http/index.js";
import { Code, ConnectError } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { decodeJwt, type JWTPayload } from "jose";
import { LRUCache } from "lru-cache";
import { organizationOf, schema, UID_SHAPES, type Database, type Executor } from "../db/index.js";
import { checkText } from "../descriptors/index.js";
import { budgetSpent } from "../egress/index.js";
import { clip, invalidArgument, rateLimited, required, unauthenticated } from "../errors/index.js";
import type { EventRecorder } from "../events/index.js";
import { issuerPatternOrigin, matchesClaimPattern } from "../services/iam/claim-pattern.js";
import type { ExchangeLimits } from "./exchange-limits.js";
import type { OidcIssuers } from "./oidc-issuers.js";
import type { OutboundBudgets } from "./outbound-budgets.js";
import type { MintedToken, TokenService } from "./tokens.js";

export interface TokenExchangeDeps {
  db: Database;
  tokens: TokenService;
  issuers: OidcIssuers;
  /** Keys are fetched on the issuers' budget of the identity's organization. */
  budgets: Pick<OutboundBudgets, "exchangeIssuers">;
  /** Calls per client address, refused calls per identity (this replica's counts). */
  limits: ExchangeLimits;
  /** Audiences a caller may ask for: the API base URL and the registry audience. */
  audiences: string[];
  /** This service's auth URL: the `aud` a workload token must carry when its identity names no audience. */
  authUrl: string;
  clock: () => Date;
  /** Where failures are logged (never shown to the caller). */
  onRejected: (reason: string) => void;
  /** Records each exchange for an existing identity, accepted or rejected, in the audit log. */
  events: EventRecorder;
}

/** Identities whose rejected exchange was recorded in the last REJECTION_WINDOW_MS (per replica). */
const REJECTION_WINDOW_MS = 60_000;
const recentRejections = new LRUCache<string, true>({ max: 10_000, ttl: REJECTION_WINDOW_MS });

/** What an exchange refused for a spent outbound budget is asked to wait: about one issuer's timeout. */
const BUSY_RETRY_SECONDS = 5;

/** The event type of a token exchange (docs/design.md, "Events"). */
export const TOKEN_EXCHANGED_EVENT = "platform.auth.token.exchanged.v1";

/** The most audiences one exchange may ask for (every one must be accepted, and all name one service). */
export const MAX_REQUESTED_AUDIENCES = 8;

export interface ExchangeRequest {
  /** The audiences asked for (`aud`, repeatable): each accepted, all naming one service; the token carries that one. */
  audiences: readonly string[];
  identityUid: string;
  /** The caller's OIDC token (the bearer token of the exchange request). */
  oidcToken: string | undefined;
  /** The socket's peer address (X-Forwarded-For is not trusted: docs/security.md, "Outbound budgets"). */
  clientAddress: string | undefined;
}

type IdentityRow = typeof schema.identities.$inferSelect;

// The issuer to contact: the identity's configured one, or the token's own
// `iss` when the identity allows it by pattern. Nothing else is ever fetched.
// A pattern stored before patterns had to fix scheme and host, that does
// not, allows nothing (docs/security.md, "What the exchange checks").
function issuerFor(identity: IdentityRow, token: string): string | undefined {
  if (identity.claimIssuer) return identity.claimIssuer;
  if (!identity.claimIssuerPattern || !issuerPatternOrigin(identity.claimIssuerPattern)) return undefined;
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch {
    return undefined;
  }
  return typeof iss === "string" && matchesClaimPattern(identity.claimIssuerPattern, iss) ? iss : undefined;
}

function subjectMatches(identity: IdentityRow, sub: string): boolean {
  if (identity.claimSubject) return identity.claimSubject === sub;
  return identity.claimSubjectPattern ? matchesClaimPattern(identity.claimSubjectPattern, sub) : false;
}

// A loopback URL has two spellings that reach the same listener: the default base URL says
// `localhost`, the default listener is 127.0.0.1, and clients use either (docs/design.md,
// "Running"). Both are taken wherever a URL of this service is compared; nothing else is.
const LOOPBACK_HOST = /^(https?:\/\/)(localhost|127\.0\.0\.1)(?=[:/]|$)/i;

/** `url` and, for a `localhost` or `127.0.0.1` URL, the same URL in the other spelling. */
export function loopbackSpellings(url: string): string[] {
  const m = LOOPBACK_HOST.exec(url);
  if (!m) return [url];
  const other = m[2]!.toLowerCase() === "localhost" ? "127.0.0.1" : "localhost";
  return [url, `${m[1]}${other}${url.slice(m[0].length)}`];
}

/**
 * The one audience the token is minted for: every value asked for must be one of `accepted`
 * (either loopback spelling), and all must name the same one. A token for the API and the
 * registry at once is refused: each service gets a token of its own, so a token leaked from
 * one cannot be used at the other (docs/security.md, "What the exchange checks").
 */
export function requestedAudience(asked: readonly string[], accepted: readonly string[]): string {
  if (asked.length > MAX_REQUESTED_AUDIENCES)
    throw invalidArgument("aud", `is given ${asked.length} times; at most ${MAX_REQUESTED_AUDIENCES}`);
  let chosen: string | undefined;
  for (const value of asked) {
    checkText(value, "aud");
    if (!value) continue;
    const canonical = accepted.find((a) => loopbackSpellings(a).includes(value));
    if (!canonical) throw invalidArgument("aud", `"${clip(value, 200)}" is not accepted: must be one of ${accepted.join(", ")}`);
    if (chosen !== undefined && chosen !== canonical) {
      throw invalidArgument(
        "aud",
        `"${clip(value, 200)}" names another service than "${chosen}": a token is for one service; exchange once for each`,
      );
    }
    chosen = canonical;
  }
  if (chosen === undefined) throw required("aud");
  return chosen;
}

/** The most `aud` values a workload token may carry. */
export const MAX_TOKEN_AUDIENCES = 32;

/**
 * The token must be meant for this service: the identity's audience (exact)
 * or audience pattern, and where it names neither, the auth URL as
 * configured, with or without a trailing slash. A token minted for another
 * application of the same issuer is never enough (docs/security.md).
 */
export function audienceAccepted(
  identity: Pick<IdentityRow, "claimAudience" | "claimAudiencePattern">,
  aud: unknown,
  authUrl: string,
): boolean {
  // Each value may be matched against a pattern: a token naming more audiences than any
  // real one does is not meant for this service (docs/security.md, "Input").
  if (Array.isArray(aud) && aud.length > MAX_TOKEN_AUDIENCES) return false;
  const values = (Array.isArray(aud) ? aud : [aud]).filter((a): a is string => typeof a === "string");
  // The exact audience wins over a pattern stored beside it (a row from before the pair was a
  // oneof), as issuer and subject do: it is the one the identity is answered with
  // (docs/design.md, "Claim match").
  if (identity.claimAudience) return values.includes(identity.claimAudience);
  if (identity.claimAudiencePattern) return values.some((a) => matchesClaimPattern(identity.claimAudiencePattern, a));
  const bare = loopbackSpellings(withoutTrailingSlash(authUrl));
  return values.some((a) => bare.includes(a) || bare.includes(a.replace(/\/$/, "")));
}

/**
 * STS: trades an OIDC token that an identity's claimMatch accepts for a
 * one-hour API token of that identity. Every failure about the token or the
 * identity is the same UNAUTHENTICATED, so callers learn nothing from it.
 */
export async function exchangeToken(deps: TokenExchangeDeps, req: ExchangeRequest): Promise<MintedToken & { audience: string }> {
  const { identity, audience } = await exchangeChecks(deps, req);
  return { ...(await deps.tokens.mint(identity, audience)), audience };
}

/**
 * The exchange without the token: every check, limit and audit event of
 * exchangeToken, and the uid of the identity the OIDC token was accepted for.
 * The registry's token endpoint takes OIDC tokens as passwords through it
 * (docs/design.md, "The image registry") and signs its own token.
 */
export async function exchangeIdentity(deps: TokenExchangeDeps, req: ExchangeRequest): Promise<string> {
  return (await exchangeChecks(deps, req)).identity;
}

/** Every check of the exchange: the identity accepted and the one audience its token is for. */
async function exchangeChecks(deps: TokenExchangeDeps, req: ExchangeRequest): Promise<{ identity: string; audience: string }> {
  await deps.limits.fromAddress(req.clientAddress);
  const audience = requestedAudience(req.audiences, deps.audiences);
  checkText(req.identityUid, "identity");
  if (!req.identityUid) throw required("identity");
  // Only identities held by a group are assumable: root-level ones are the
  // bootstrap identity and people who signed in with a browser.
  if (!UID_SHAPES.child.test(req.identityUid)) throw invalidArgument("identity", "is not the uid of an identity held by a group");
  // Refused exchanges naming the identity are counted, whether it exists or not, and accepted ones
  // are not: strangers naming it cannot spend what its workloads need. Once it is over its count,
  // only tokens whose own `iss` has keys already cached are looked at (verified with those keys,
  // never going out); the rest are answered 429. Both are decided by the token and the count
  // alone, before the identity is looked up, so a 429 does not tell whether it exists
  // (docs/security.md, "Outbound budgets").
  const over = await deps.limits.identityOver(req.identityUid);
  if (over) {
    const claimed = claimedIssuer(req.oidcToken);
    if (claimed === undefined || !deps.issuers.hasKeys(claimed)) throw over;
  }
  try {
    return { identity: await exchangeChecked(deps, { ...req, audience }, over !== undefined), audience };
  } catch (e) {
    if (e instanceof ConnectError && e.code === Code.Unauthenticated) await deps.limits.refusedFor(req.identityUid);
    throw e;
  }
}

/** The `iss` a token claims (not verified), if it is a JWT that names one. */
function claimedIssuer(token: string | undefined): string | undefined {
  if (!token) return undefined;
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === "string" ? iss : undefined;
  } catch {
    return undefined;
  }
}

/** The exchange after its limits; `cachedKeysOnly`: the identity is over its count of refusals. */
async function exchangeChecked(
  deps: TokenExchangeDeps,
  req: ExchangeRequest & { audience: string },
  cachedKeysOnly: boolean,
): Promise<string> {
  const reject = (reason: string) => {
    deps.onRejected(reason);
    return unauthenticated("the token was not accepted for this identity", req.oidcToken !== undefined);
  };
  if (!req.oidcToken) throw reject("no bearer token");
  const [identity] = await deps.db.select().from(schema.identities).where(eq(schema.identities.uid, req.identityUid));
  if (!identity || identity.parentUid === null) throw reject("unknown identity");
  // A token whose signature checks out at the identity's issuer is an attempt worth its
  // organization's audit log, accepted or not; anything less (no usable issuer, a forged or
  // garbage token) is only logged, so strangers cannot write events by guessing uids.
  const record = (outcome: "accepted" | "rejected", reason: string, tx: Executor = deps.db) =>
    deps.events.record(tx, {
      type: TOKEN_EXCHANGED_EVENT,
      subject: identity.uid,
      actor: outcome === "accepted" ? identity.uid : "",
      group: identity.parentUid,
      data: { outcome, audience: req.audience, ...(reason ? { reason } : {}) },
    });
  const refuse = async (reason: string) => {
    // One rejected event per identity per window and replica: a public issuer's tokens are easy to
    // come by, and repeated tries must not flood the organization's log and webhooks.
    if (!recentRejections.has(identity.uid)) {
      recentRejections.set(identity.uid, true);
      await record("rejected", reason);
      deps.events.announce();
    }
    return reject(reason);
  };
  const issuer = issuerFor(identity, req.oidcToken);
  if (!issuer) throw reject("identity has no usable issuer for this token");
  let payload: JWTPayload;
  try {
    payload = cachedKeysOnly
      ? await deps.issuers.verifyCached(req.oidcToken, issuer)
      : await deps.issuers.verify(req.oidcToken, issuer, deps.budgets.exchangeIssuers(identity.parentUid));
  } catch (e) {
    // The organization's issuers' budget is spent (docs/security.md, "Outbound budgets"): nothing
    // was decided about the token, so the caller is told to retry rather than refused.
    if (budgetSpent(e)) {
      deps.onRejected(`verification not attempted: ${String(e)}`);
      const org = organizationOf(identity.uid);
      throw rateLimited(
        `organization:${org}`,
        "too many requests to this organization's OIDC issuers are in flight; retry shortly",
        BUSY_RETRY_SECONDS,
      );
    }
    throw reject(`verification failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!audienceAccepted(identity, payload.aud, deps.authUrl)) throw await refuse("audience not meant for this service");
  if (!subjectMatches(identity, String(payload.sub))) throw await refuse("subject does not match");
  await deps.db.transaction(async (tx) => {
    await tx.update(schema.identities).set({ lastSeenTime: deps.clock() }).where(eq(schema.identities.uid, identity.uid));
    await record("accepted", "", tx);
  });
  deps.events.announce();
  return identity.uid;
}
