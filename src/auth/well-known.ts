import type { SigningKeys } from "./signing-keys.js";
import { SIGNING_ALG } from "./signing-keys.js";

/** /.well-known/openid-configuration for the service's own issuer. */
export function openidConfiguration(issuer: string): Record<string, unknown> {
  return {
    issuer,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    token_endpoint: `${issuer}/sts/exchange`,
    response_types_supported: ["token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
  };
}

export async function jwks(keys: SigningKeys): Promise<Record<string, unknown>> {
  return keys.publicJwks();
}
