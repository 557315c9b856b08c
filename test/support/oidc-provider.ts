import http from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { exportJWK, generateKeyPair } from "jose";
import Provider, { type ClientMetadata } from "oidc-provider";

export interface TestOidcProvider {
  issuer: string;
  /** Requests the provider has answered (to prove who was contacted). */
  requests(): number;
  /** A JWT access token for `clientId`, issued by the provider's token endpoint (client credentials). */
  workloadToken(clientId: string, audience?: string): Promise<string>;
  stop(): Promise<void>;
}

export const WORKLOAD_AUDIENCE = "urn:platform-api:test";

/** A client that signs people in with the authorization code flow. */
export interface LoginClient {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  /**
   * Its access tokens are for the provider's userinfo endpoint, which then
   * alone returns the email and profile claims. Otherwise they are JWTs for
   * WORKLOAD_AUDIENCE, and those claims are in the ID token.
   */
  userinfo?: boolean;
}

export interface OidcProviderOptions {
  /**
   * Authorization-code clients. With any, the provider's development login
   * and consent pages are on (any login and password sign in; the account's
   * `sub` is the login, its verified `email` the login, or `<login>@example.com`
   * when the login has no `@`). They are native apps, so a loopback redirect
   * URI matches on any port (RFC 8252).
   */
  loginClients?: LoginClient[];
}

/**
 * A real OIDC provider (the `oidc-provider` package) on a loopback port. Its
 * clients get JWT access tokens through the client-credentials grant; those
 * are the "workload OIDC tokens" the token exchange accepts.
 */
export async function startOidcProvider(clientIds: string[], options: OidcProviderOptions = {}): Promise<TestOidcProvider> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { privateKey } = await generateKeyPair("RS256", { extractable: true });
  const loginClients = options.loginClients ?? [];
  const userinfoClients = new Set(loginClients.filter((c) => c.userinfo).map((c) => c.clientId));
  // The types want a string, but no resource (oidc-provider's own default) is what makes a userinfo token.
  const defaultResource = (_ctx: unknown, client: { clientId: string }) =>
    userinfoClients.has(client.clientId) ? undefined : WORKLOAD_AUDIENCE;
  const people = loginClients.length
    ? {
        claims: { email: ["email", "email_verified"], profile: ["name", "preferred_username"] },
        findAccount: (_ctx: unknown, sub: string) => ({
          accountId: sub,
          claims: () => {
            const email = sub.includes("@") ? sub : `${sub}@example.com`;
            return { sub, email, email_verified: true, name: sub, preferred_username: sub };
          },
        }),
      }
    : {};
  const provider = new Provider(issuer, {
    jwks: { keys: [{ ...(await exportJWK(privateKey)), kid: "test-key", alg: "RS256", use: "sig" }] },
    cookies: { keys: [randomBytes(16).toString("hex")] },
    // Explicit lifetimes of the login artifacts keep oidc-provider from logging notices.
    ttl: {
      ClientCredentials: 600,
      ...(loginClients.length ? { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600 } : {}),
    },
    clients: [
      ...clientIds.map(
        (id): ClientMetadata => ({
          client_id: id,
          client_secret: `${id}-secret`,
          grant_types: ["client_credentials"],
          redirect_uris: [],
          response_types: [],
        }),
      ),
      ...loginClients.map(
        (c): ClientMetadata => ({
          client_id: c.clientId,
          client_secret: c.clientSecret,
          application_type: "native",
          grant_types: ["authorization_code"],
          redirect_uris: c.redirectUris,
          response_types: ["code"],
        }),
      ),
    ],
    ...people,
    features: {
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: defaultResource as (ctx: unknown, client: { clientId: string }) => string,
        getResourceServerInfo: (_ctx, resource) => ({
          scope: "",
          audience: resource,
          accessTokenFormat: "jwt",
          jwt: { sign: { alg: "RS256" } },
        }),
        useGrantedResource: () => true,
      },
      devInteractions: { enabled: loginClients.length > 0 },
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
