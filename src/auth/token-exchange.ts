import { eq } from "drizzle-orm";
import { decodeJwt } from "jose";
import { schema, type Database } from "../db/index.js";
import { invalidArgument, unauthenticated } from "../errors/index.js";
import type { OidcIssuers } from "./oidc-issuers.js";
import type { MintedToken, TokenService } from "./tokens.js";

export interface TokenExchangeDeps {
  db: Database;
  tokens: TokenService;
  issuers: OidcIssuers;
  /** Audiences a caller may ask for: the API base URL and the registry audience. */
  audiences: string[];
  clock: () => Date;
  /** Where failures are logged (never shown to the caller). */
  onRejected: (reason: string) => void;
}

export interface ExchangeRequest {
  audience: string;
  identityUid: string;
  /** The caller's OIDC token (the bearer token of the exchange request). */
  oidcToken: string | undefined;
}

/** Anchored match: a claimMatch pattern must match the whole claim. */
export function matchesPattern(pattern: string, value: string): boolean {
  try {
    return new RegExp(`^(?:${pattern})$`, "u").test(value);
  } catch {
    return false;
  }
}

type IdentityRow = typeof schema.identities.$inferSelect;

// The issuer to contact: the identity's configured one, or the token's own
// `iss` when the identity allows it by pattern. Nothing else is ever fetched.
function issuerFor(identity: IdentityRow, token: string): string | undefined {
  if (identity.claimIssuer) return identity.claimIssuer;
  if (!identity.claimIssuerPattern) return undefined;
  let iss: unknown;
  try {
    iss = decodeJwt(token).iss;
  } catch {
    return undefined;
  }
  return typeof iss === "string" && matchesPattern(identity.claimIssuerPattern, iss) ? iss : undefined;
}

function subjectMatches(identity: IdentityRow, sub: string): boolean {
  if (identity.claimSubject) return identity.claimSubject === sub;
  return identity.claimSubjectPattern ? matchesPattern(identity.claimSubjectPattern, sub) : false;
}

/**
 * STS: trades an OIDC token that an identity's claimMatch accepts for a
 * one-hour API token of that identity. Every failure about the token or the
 * identity is the same UNAUTHENTICATED, so callers learn nothing from it.
 */
export async function exchangeToken(deps: TokenExchangeDeps, req: ExchangeRequest): Promise<MintedToken> {
  if (!req.audience) throw invalidArgument("aud", "is required");
  if (!deps.audiences.includes(req.audience)) throw invalidArgument("aud", `must be one of ${deps.audiences.join(", ")}`);
  if (!req.identityUid) throw invalidArgument("identity", "is required");
  const reject = (reason: string) => {
    deps.onRejected(reason);
    return unauthenticated("the token was not accepted for this identity");
  };
  if (!req.oidcToken) throw reject("no bearer token");
  const [identity] = await deps.db.select().from(schema.identities).where(eq(schema.identities.uid, req.identityUid));
  if (!identity) throw reject("unknown identity");
  const issuer = issuerFor(identity, req.oidcToken);
  if (!issuer) throw reject("identity has no usable issuer for this token");
  let sub: string;
  try {
    const payload = await deps.issuers.verify(req.oidcToken, issuer, identity.claimAudience || undefined);
    sub = String(payload.sub);
  } catch (e) {
    throw reject(`verification failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!subjectMatches(identity, sub)) throw reject("subject does not match");
  await deps.db.update(schema.identities).set({ lastSeenTime: deps.clock() }).where(eq(schema.identities.uid, identity.uid));
  return deps.tokens.mint(identity.uid, req.audience);
}
