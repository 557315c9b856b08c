// Who is calling, as the call pipeline records it for authorization, events and the services to
// read (docs/architecture.md, "The pipeline (both kinds of call)"): below them all, so that each
// may read it. Proving who is calling (the token) is src/auth/'s.
import { createContextKey } from "@connectrpc/connect";

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
