import { createContextKey, type ContextValues } from "@connectrpc/connect";
import { unauthenticated } from "../errors/index.js";
import type { TokenService } from "./tokens.js";

/** Who is calling: the identity a verified API token names. */
export interface Principal {
  identityUid: string;
  audience: string;
  /** When the caller's token expires: a stream it opened ends then. */
  expiry: Date;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "authenticated caller" });

// Reflection and health must answer without credentials so that tools and
// load balancers can use them.
const PUBLIC_SERVICE_PREFIXES = ["grpc.reflection.", "grpc.health."];

export function isPublicService(typeName: string): boolean {
  return PUBLIC_SERVICE_PREFIXES.some((p) => typeName.startsWith(p));
}

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
