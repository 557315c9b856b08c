import { stat, readFile } from "node:fs/promises";
import { SignJWT, decodeProtectedHeader, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import grpc from "@grpc/grpc-js";
import { grpcJsClient, grpcUnary, restClient, type JsonObject } from "../support/clients.js";
import { bootstrapIdentityUid } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server?.stop();
});

const listWith = (token: string | undefined) => restClient(server.url, token)("GET", "/iam/v2beta1/groups");

async function expectUnauthenticated(token: string | undefined): Promise<void> {
  const res = await listWith(token);
  expect(res.status).toBe(401);
  expect(res.body["code"]).toBe(16);
  const info = (res.body["details"] as JsonObject[]).find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
  expect(info).toMatchObject({ reason: "UNAUTHENTICATED" });
  // RFC 6750: the scheme, and invalid_token when a token was given and refused.
  expect(res.headers.get("www-authenticate")).toBe(token === undefined ? "Bearer" : 'Bearer error="invalid_token"');
}

describe("API tokens", () => {
  it("publishes the issuer's discovery document and JWKS", async () => {
    const conf = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as JsonObject;
    expect(conf["issuer"]).toBe(server.app.urls.authUrl);
    expect(conf["jwks_uri"]).toBe(`${server.app.urls.authUrl}/.well-known/jwks.json`);
    const jwks = (await (await fetch(`${server.url}/.well-known/jwks.json`)).json()) as { keys: JsonObject[] };
    const kid = decodeProtectedHeader(server.token).kid;
    const key = jwks.keys.find((k) => k["kid"] === kid);
    expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect(key).not.toHaveProperty("d");
  });

  it("writes the bootstrap admin token to a 0600 file", async () => {
    const path = server.app.adminTokenPath!;
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await readFile(path, "utf8")).trim()).toBe(server.token);
    expect((await listWith(server.token)).status).toBe(200);
  });

  it("refuses a request without a token, or with a malformed header", async () => {
    await expectUnauthenticated(undefined);
    const res = await fetch(`${server.url}/iam/v2beta1/groups`, { headers: { authorization: "Basic Zm9vOmJhcg==" } });
    expect(res.status).toBe(401);
    await expectUnauthenticated("not-a-jwt");
  });

  it("names the Bearer scheme on every 401: REST, a plain route, Connect unary (a header); gRPC keeps its status", async () => {
    const basic = await fetch(`${server.url}/iam/v2beta1/groups`, { headers: { authorization: "Basic Zm9vOmJhcg==" } });
    expect(basic.headers.get("www-authenticate")).toBe("Bearer");
    const exchange = await fetch(
      `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${"a".repeat(40)}/${"b".repeat(16)}`,
    );
    expect(exchange.status).toBe(401);
    expect(exchange.headers.get("www-authenticate")).toBe("Bearer");
    const refused = await fetch(
      `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${"a".repeat(40)}/${"b".repeat(16)}`,
      {
        headers: { authorization: "Bearer not-a-jwt" },
      },
    );
    expect(refused.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    for (const [authorization, challenge] of [
      [undefined, "Bearer"],
      ["Bearer not-a-jwt", 'Bearer error="invalid_token"'],
    ] as const) {
      const connect = await fetch(`${server.url}/platform.iam.v2beta1.GroupsService/ListGroups`, {
        method: "POST",
        headers: { "content-type": "application/json", ...(authorization ? { authorization } : {}) },
        body: "{}",
      });
      expect(connect.status).toBe(401);
      expect(connect.headers.get("www-authenticate")).toBe(challenge);
    }
    const grpcClient = grpcJsClient(
      `127.0.0.1:${server.app.port}`,
      "platform.iam.v2beta1.GroupsService",
      "platform/iam/v2beta1/groups.proto",
    );
    try {
      const err = (await grpcUnary(grpcClient, "ListGroups", {}, "not-a-jwt").catch((e) => e)) as grpc.ServiceError;
      expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    } finally {
      grpcClient.close();
    }
  });

  it("refuses alg=none, a foreign key, a tampered payload, a wrong issuer and a wrong audience", async () => {
    const header = decodeProtectedHeader(server.token);
    const payload = JSON.parse(Buffer.from(server.token.split(".")[1]!, "base64url").toString()) as JsonObject;
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    await expectUnauthenticated(`${b64({ alg: "none", typ: "JWT" })}.${b64(payload)}.`);

    const { privateKey } = await generateKeyPair("ES256");
    const foreign = await new SignJWT(payload).setProtectedHeader({ alg: "ES256", kid: header.kid! }).sign(privateKey);
    await expectUnauthenticated(foreign);

    const [h, , s] = server.token.split(".");
    await expectUnauthenticated(`${h}.${b64({ ...payload, sub: "x" })}.${s}`);

    const wrongAudience = await server.app.tokens.mint(String(payload["sub"]), "https://elsewhere.example");
    await expectUnauthenticated(wrongAudience.token);
  });

  it("refuses a token whose identity does not exist", async () => {
    const minted = await server.app.tokens.mint("0123456789abcdef", server.app.urls.baseUrl);
    await expectUnauthenticated(minted.token);
  });

  it("refuses an expired token", async () => {
    const minted = await server.app.tokens.mint(bootstrapIdentityUid(server.token), server.app.urls.baseUrl);
    expect((await listWith(minted.token)).status).toBe(200);
    expect(minted.expiry.getTime() - server.clock.now().getTime()).toBeGreaterThan(59 * 60 * 1000);
    server.clock.advance(60 * 60 * 1000 + 60_000);
    await expectUnauthenticated(minted.token);
  });
});
