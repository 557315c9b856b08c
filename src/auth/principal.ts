import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { unauthenticated } from "../errors/index.js";
import type { TokenService } from "./tokens.js";

/** Who is calling: the identity a verified API token names. */
export interface Principal {
  identityUid: string;
  audience: string;
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

/** Requires a valid API token on every RPC of every protocol, except the public services. */
export function authenticationInterceptor(tokens: TokenService, audiences: () => string[]): Interceptor {
  return (next) => async (req) => {
    if (isPublicService(req.service.typeName)) return next(req);
    const token = bearerToken(req.header.get("authorization"));
    if (!token) throw unauthenticated("missing Authorization: Bearer <token> header");
    const verified = await tokens.verify(token, audiences());
    req.contextValues.set(principalKey, { identityUid: verified.subject, audience: verified.audience });
    return next(req);
  };
}
