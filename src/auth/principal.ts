import type { ContextValues } from "@connectrpc/connect";
import { type Principal, principalKey } from "../caller/index.js";
import { unauthenticated } from "../errors/index.js";
import type { TokenService } from "./tokens.js";

export function bearerToken(header: string | null): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * The caller of a non-public RPC: a valid API token is required on every
 * protocol. Records the principal in `values` (for authorization and the
 * services). One function for the Connect interceptor and the REST entry point.
 */
export async function authenticate(
  tokens: TokenService,
  audiences: string[],
  authorization: string | null,
  values: ContextValues,
): Promise<Principal> {
  const token = bearerToken(authorization);
  if (!token) throw unauthenticated("missing Authorization: Bearer <token> header");
  const verified = await tokens.verify(token, audiences);
  const principal = { identityUid: verified.subject, audience: verified.audience, expiry: verified.expiry };
  values.set(principalKey, principal);
  return principal;
}
