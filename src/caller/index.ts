// Who is calling, as the call pipeline records it for authorization, events and the services to
// read (docs/architecture.md, "The pipeline (both kinds of call)"): below them all, so that each
// may read it. Proving who is calling (the token) is src/auth/'s.
import { createContextKey } from "@connectrpc/connect";
import { PUBLIC_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";

/** Who is calling: the identity a verified API token names. */
export interface Principal {
  identityUid: string;
  audience: string;
  /** When the caller's token expires: a stream it opened ends then. */
  expiry: Date;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "authenticated caller" });

/**
 * Set by an IAM write that touched none of the tables grants are read from (a child group: its row
 * and its event): the writing replica keeps its grants cache (docs/design.md, "Tokens and access").
 */
export const grantsUnchangedKey = createContextKey<boolean>(false, { description: "write changed no grants" });

/** The peer address of the call's connection (X-Forwarded-For is not trusted), for per-address limits. */
export const clientAddressKey = createContextKey<string | undefined>(undefined, { description: "client address" });

// Reflection and health must answer without credentials so that tools and
// load balancers can use them; the protos' public services (their methods
// declare `public`: the token exchange) take a credential of their own.
const PUBLIC_SERVICE_PREFIXES = ["grpc.reflection.", "grpc.health."];
const PUBLIC_SERVICES = new Set(PUBLIC_SERVICE_DESCRIPTORS.map((s) => s.typeName));

export function isPublicService(typeName: string): boolean {
  return PUBLIC_SERVICES.has(typeName) || PUBLIC_SERVICE_PREFIXES.some((p) => typeName.startsWith(p));
}
