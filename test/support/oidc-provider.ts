import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair } from "jose";
import Provider from "oidc-provider";

export interface TestOidcProvider {
  issuer: string;
  /** Requests the provider has answered (to prove who was contacted). */
  requests(): number;
  /** A JWT access token for `clientId`, issued by the provider's token endpoint (client credentials). */
  workloadToken(clientId: string, audience?: string): Promise<string>;
  stop(): Promise<void>;
}

export const WORKLOAD_AUDIENCE = "urn:platform-api:test";

/**
 * A real OIDC provider (the `oidc-provider` package) on a loopback port. Its
 * clients get JWT access tokens through the client-credentials grant; those
 * are the "workload OIDC tokens" the token exchange accepts.
 */
export async function startOidcProvider(clientIds: string[]): Promise<TestOidcProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "test-key", alg: "RS256", use: "sig" }] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    ttl: { ClientCredentials: 600 },
    clients: clientIds.map((id) => ({
      client_id: id,
      client_secret: `${id}-secret`,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
    })),
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => WORKLOAD_AUDIENCE,
        getResourceServerInfo: (_ctx, resource) => ({ scope: "", audience: resource, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } }),
        useGrantedResource: () => true,
      },
      devInteractions: { enabled: false },
    },
  });
  let count = 0;
  const callback = provider.callback();
  server.on("request", (req, res) => {
    count++;
    callback(req, res);
  });
  return {
    issuer,
    requests: () => count,
    async workloadToken(clientId, audience = WORKLOAD_AUDIENCE) {
      const res = await fetch(`${issuer}/token`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          authorization: `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString("base64")}`,
        },
        body: new URLSearchParams({ grant_type: "client_credentials", resource: audience }),
      });
      const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
      if (!body.access_token) throw new Error(`token endpoint: ${body.error}: ${body.error_description}`);
      return body.access_token;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
