import http2 from "node:http2";
import grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SecurityTokenService } from "../../gen/platform/sts/v1/sts_pb.js";
import { newChildUid, schema } from "../../src/db/index.js";
import { connectClient, grpcJsClient, grpcStatusDetails, grpcUnary, restClient, type JsonObject } from "../support/clients.js";
import { reflect } from "../support/grpc/grpc-js-clients.js";
import { startOidcProvider, type TestOidcProvider } from "../support/oidc-provider.js";
import { startTestServer, type TestServer } from "../support/server.js";

// The token exchange's front doors (docs/design.md, "Tokens and access"): /sts/exchange by GET,
// by POST with a form body (ours and RFC 8693's parameter names), and the SecurityTokenService
// RPC over gRPC and Connect, all one implementation with the same checks and limits.

let server: TestServer;
let provider: TestOidcProvider;
let identity: string;
let grpcClient: grpc.Client & Record<string, unknown>;

const FORM = "application/x-www-form-urlencoded";
const localSpelling = (url: string) => url.replace("//localhost:", "//127.0.0.1:");

beforeAll(async () => {
  provider = await startOidcProvider(["workload-a"]);
  server = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true" });
  const g = await restClient(server.url, server.token)("POST", "/iam/v2beta1/groups", { name: "sts-doors" });
  identity = await makeIdentity(server, g.body["uid"] as string);
  grpcClient = grpcJsClient(`127.0.0.1:${server.app.port}`, "platform.sts.v1.SecurityTokenService", "platform/sts/v1/sts.proto");
});
afterAll(async () => {
  grpcClient?.close();
  await server?.stop();
  await provider?.stop();
});

async function makeIdentity(target: TestServer, parent: string): Promise<string> {
  const now = target.clock.now();
  const uid = newChildUid(parent);
  await target.app.database.db.insert(schema.identities).values({
    uid,
    parentUid: parent,
    name: `workload ${uid.slice(-6)}`,
    claimIssuer: provider.issuer,
    claimSubject: "workload-a",
    createTime: now,
    updateTime: now,
  });
  return uid;
}

const oidcToken = (aud = server.app.urls.authUrl) => provider.workloadToken("workload-a", aud);

async function post(body: string, headers: Record<string, string> = {}, query = "") {
  const res = await fetch(`${server.url}/sts/exchange${query}`, { method: "POST", headers: { "content-type": FORM, ...headers }, body });
  return { status: res.status, headers: res.headers, body: (await res.json()) as JsonObject };
}

async function get(params: [string, string][], token?: string) {
  const res = await fetch(`${server.url}/sts/exchange?${new URLSearchParams(params)}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as JsonObject };
}

/** A POST over HTTP/2 whose body is sent as DATA frames with no content-length header. */
async function h2Post(path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: JsonObject }> {
  const session = http2.connect(server.url);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({ ":method": "POST", ":path": path, ...headers });
      let status = 0;
      let text = "";
      stream.on("response", (h) => (status = Number(h[":status"])));
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => (text += chunk));
      stream.on("end", () => resolve({ status, body: JSON.parse(text) as JsonObject }));
      stream.on("error", reject);
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

function violation(body: JsonObject): JsonObject | undefined {
  const bad = (body["details"] as JsonObject[] | undefined)?.find((d) => d["@type"] === "type.googleapis.com/google.rpc.BadRequest");
  return (bad?.["fieldViolations"] as JsonObject[] | undefined)?.[0];
}

describe("/sts/exchange with a form body", () => {
  it("takes aud and identity from the form, the OIDC token from the header, and answers RFC 8693's fields beside ours", async () => {
    const form = new URLSearchParams({ aud: server.app.urls.baseUrl, identity });
    const res = await post(form.toString(), { authorization: `Bearer ${await oidcToken()}` });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ token_type: "Bearer", issued_token_type: "urn:ietf:params:oauth:token-type:jwt", expires_in: 3600 });
    expect(res.body["access_token"]).toBe(res.body["token"]);
    expect(decodeJwt(res.body["token"] as string)).toMatchObject({ sub: identity, aud: server.app.urls.baseUrl });
    expect(res.headers.get("cache-control")).toBe("no-store");
  });

  it("reads the form of an HTTP/2 POST that declares no content-length (the stream's frames carry its length)", async () => {
    const form = new URLSearchParams({ aud: server.app.urls.baseUrl, identity, subject_token: await oidcToken() }).toString();
    const answer = await h2Post("/sts/exchange", { "content-type": FORM }, form);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(decodeJwt(answer.body["token"] as string)).toMatchObject({ sub: identity, aud: server.app.urls.baseUrl });
  });

  it("over HTTP/2 without a length: an empty body needs no content-type, a body that is not a form is refused", async () => {
    const query = `?${new URLSearchParams({ aud: server.app.urls.baseUrl, identity })}`;
    const empty = await h2Post(`/sts/exchange${query}`, { authorization: `Bearer ${await oidcToken()}` }, "");
    expect(empty.status, JSON.stringify(empty.body)).toBe(200);
    const json = await h2Post(`/sts/exchange${query}`, { "content-type": "application/json" }, '{"aud":"x"}');
    expect(json.status).toBe(400);
    expect(violation(json.body)).toMatchObject({ field: "content-type" });
  });

  it("takes RFC 8693's names: grant_type, audience, resource, subject_token and its type", async () => {
    const form = new URLSearchParams({
      grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
      audience: server.app.urls.registryAudience,
      subject_token: await oidcToken(),
      subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
      identity,
    });
    const res = await post(form.toString());
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(decodeJwt(res.body["token"] as string).aud).toBe(server.app.urls.registryAudience);
    const byResource = await post(
      new URLSearchParams({ resource: server.app.urls.baseUrl, subject_token: await oidcToken(), identity }).toString(),
    );
    expect(byResource.status, JSON.stringify(byResource.body)).toBe(200);
  });

  it("takes repeated aud naming one service, in either loopback spelling, and mints the one API audience", async () => {
    const base = server.app.urls.baseUrl;
    expect(base).toMatch(/^http:\/\/localhost:\d+$/);
    const form = new URLSearchParams([
      ["aud", base],
      ["aud", localSpelling(base)],
      ["identity", identity],
    ]);
    const res = await post(form.toString(), { authorization: `Bearer ${await oidcToken()}` });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(decodeJwt(res.body["token"] as string).aud).toBe(base);
    // And the token works on the API.
    expect((await restClient(server.url, res.body["token"] as string)("GET", "/iam/v2beta1/groups")).status).toBe(200);
  });

  it("refuses, naming it, an aud that is not accepted, and one that names another service than the first", async () => {
    const token = await oidcToken();
    const foreign = await get(
      [
        ["aud", server.app.urls.baseUrl],
        ["aud", "https://elsewhere.example"],
        ["identity", identity],
      ],
      token,
    );
    expect(foreign.status).toBe(400);
    expect(violation(foreign.body)).toMatchObject({ field: "aud" });
    expect(violation(foreign.body)?.["description"]).toContain('"https://elsewhere.example" is not accepted');
    const mixed = await get(
      [
        ["aud", server.app.urls.baseUrl],
        ["aud", server.app.urls.registryAudience],
        ["identity", identity],
      ],
      token,
    );
    expect(mixed.status).toBe(400);
    expect(violation(mixed.body)?.["description"]).toContain(`"${server.app.urls.registryAudience}" names another service`);
  });

  it.each<[string, () => Promise<{ status: number; body: JsonObject }>, string, string]>([
    [
      "no aud",
      async () => post(new URLSearchParams({ identity }).toString(), { authorization: `Bearer ${await oidcToken()}` }),
      "aud",
      "is required",
    ],
    [
      "nine aud values",
      async () =>
        post(
          new URLSearchParams([
            ...Array.from({ length: 9 }, (): [string, string] => ["aud", server.app.urls.baseUrl]),
            ["identity", identity],
          ]).toString(),
        ),
      "aud",
      "is given 9 times; at most 8",
    ],
    [
      "a NUL in identity",
      async () => post(new URLSearchParams({ aud: server.app.urls.baseUrl, identity: `${identity}\u0000` }).toString()),
      "identity",
      "must not contain control characters (NUL included)",
    ],
    [
      "identity twice",
      async () =>
        post(
          new URLSearchParams([
            ["aud", server.app.urls.baseUrl],
            ["identity", identity],
            ["identity", identity],
          ]).toString(),
        ),
      "identity",
      "is given more than once",
    ],
    [
      "a body over 16 KiB",
      async () => post(new URLSearchParams({ aud: server.app.urls.baseUrl, identity, pad: "x".repeat(17 * 1024) }).toString()),
      "body",
      "is larger than 16384 bytes",
    ],
    [
      "a JSON body",
      async () => {
        const res = await fetch(`${server.url}/sts/exchange`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ aud: server.app.urls.baseUrl, identity }),
        });
        return { status: res.status, body: (await res.json()) as JsonObject };
      },
      "content-type",
      'must be application/x-www-form-urlencoded for a POST with a body, not "application/json"',
    ],
    [
      "subject_token in the URL",
      async () =>
        get([
          ["aud", server.app.urls.baseUrl],
          ["identity", identity],
          ["subject_token", await oidcToken()],
        ]),
      "subject_token",
      "must not be in the URL: send it in a POST form body or as the Authorization header",
    ],
    [
      "subject_token and an Authorization header",
      async () =>
        post(new URLSearchParams({ aud: server.app.urls.baseUrl, identity, subject_token: await oidcToken() }).toString(), {
          authorization: `Bearer ${await oidcToken()}`,
        }),
      "subject_token",
      "is given with an Authorization header: send the OIDC token once",
    ],
    [
      "another grant_type",
      async () => post(new URLSearchParams({ aud: server.app.urls.baseUrl, identity, grant_type: "password" }).toString()),
      "grant_type",
      "must be urn:ietf:params:oauth:grant-type:token-exchange when given",
    ],
  ])("refuses %s with INVALID_ARGUMENT naming the field", async (_label, send, field, description) => {
    const res = await send();
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body["code"]).toBe(3);
    expect(violation(res.body)).toMatchObject({ field, description });
    const info = (res.body["details"] as JsonObject[]).find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
    expect(info).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "sts.localhost" });
  });

  it("marks a missing aud as a REQUIRED violation", async () => {
    const res = await get([["identity", identity]], await oidcToken());
    expect(violation(res.body)).toEqual({ field: "aud", description: "is required", reason: "REQUIRED" });
  });
});

describe("the local audience in either spelling (the listener is 127.0.0.1, the default base URL says localhost)", () => {
  it("GET /sts/exchange?aud=http://127.0.0.1:PORT is the API audience", async () => {
    const res = await get(
      [
        ["aud", localSpelling(server.app.urls.baseUrl)],
        ["identity", identity],
      ],
      await oidcToken(),
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(decodeJwt(res.body["token"] as string).aud).toBe(server.app.urls.baseUrl);
  });

  it("a workload token meant for the auth URL in the 127.0.0.1 spelling is accepted; another host still is not", async () => {
    const params: [string, string][] = [
      ["aud", server.app.urls.baseUrl],
      ["identity", identity],
    ];
    expect((await get(params, await oidcToken(`${localSpelling(server.app.urls.authUrl)}/`))).status).toBe(200);
    expect((await get(params, await oidcToken("http://127.0.0.2:1"))).status).toBe(401);
  });
});

describe("SecurityTokenService/ExchangeToken", () => {
  interface Answer {
    token: string;
    audience: string;
    expire_time: { seconds: string };
  }

  it("over gRPC (grpc-js), with the OIDC token as subject_token or as the call's bearer token, and no API token", async () => {
    const byField = await grpcUnary<Answer>(grpcClient, "ExchangeToken", {
      audiences: [localSpelling(server.app.urls.baseUrl)],
      identity,
      subject_token: await oidcToken(),
    });
    const claims = decodeJwt(byField.token);
    expect(claims).toMatchObject({ sub: identity, aud: server.app.urls.baseUrl });
    expect(byField.audience).toBe(server.app.urls.baseUrl);
    expect(Number(byField.expire_time.seconds)).toBe(claims.exp);
    const byMetadata = await grpcUnary<Answer>(
      grpcClient,
      "ExchangeToken",
      { audiences: [server.app.urls.registryAudience], identity },
      await oidcToken(),
    );
    expect(decodeJwt(byMetadata.token).aud).toBe(server.app.urls.registryAudience);
  });

  it("over gRPC, refuses as the HTTP door does: UNAUTHENTICATED for a token not accepted, INVALID_ARGUMENT with REQUIRED for no audience", async () => {
    const refused = await grpcUnary(
      grpcClient,
      "ExchangeToken",
      { audiences: [server.app.urls.baseUrl], identity },
      await oidcToken("urn:other"),
    ).catch((e: grpc.ServiceError) => e);
    expect((refused as grpc.ServiceError).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((refused as grpc.ServiceError).details).toBe("Unauthenticated: the token was not accepted for this identity");
    expect(grpcStatusDetails(refused as grpc.ServiceError).details.find((d) => d.type === "google.rpc.ErrorInfo")?.value).toMatchObject({
      reason: "UNAUTHENTICATED",
      domain: "sts.localhost",
    });
    const noAudience = (await grpcUnary(grpcClient, "ExchangeToken", { identity, subject_token: await oidcToken() }).catch(
      (e) => e,
    )) as grpc.ServiceError;
    expect(noAudience.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcStatusDetails(noAudience).details[0]?.value).toMatchObject({ fieldViolations: [{ field: "aud", reason: "REQUIRED" }] });
  });

  it("over Connect (JSON and binary), the same exchange", async () => {
    for (const protocol of ["connect", "grpc-web"] as const) {
      const client = connectClient(SecurityTokenService, server.url, "", protocol);
      const answer = await client.exchangeToken({ audiences: [server.app.urls.baseUrl], identity, subjectToken: await oidcToken() });
      expect(decodeJwt(answer.token).sub, protocol).toBe(identity);
      const err = await client
        .exchangeToken({ audiences: ["https://elsewhere.example"], identity, subjectToken: await oidcToken() })
        .catch((e) => e);
      expect(err, protocol).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code, protocol).toBe(Code.InvalidArgument);
    }
  });

  it("bounds the RPC's input as the HTTP door's: nine audiences, a NUL, a message over 64 KiB", async () => {
    const client = connectClient(SecurityTokenService, server.url, "");
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => undefined,
        (e: unknown) => e as ConnectError,
      );
    const tooMany = await refusal(
      client.exchangeToken({ audiences: Array<string>(9).fill(server.app.urls.baseUrl), identity, subjectToken: await oidcToken() }),
    );
    expect(tooMany?.code).toBe(Code.InvalidArgument);
    expect(tooMany?.rawMessage).toBe("Invalid argument: aud: is given 9 times; at most 8");
    const nul = await refusal(
      client.exchangeToken({ audiences: [server.app.urls.baseUrl], identity: `${identity}\u0000`, subjectToken: "x" }),
    );
    expect(nul?.code).toBe(Code.InvalidArgument);
    expect(nul?.rawMessage).toContain("Invalid argument: identity:");
    const huge = await refusal(
      client.exchangeToken({ audiences: [server.app.urls.baseUrl], identity, subjectToken: "x".repeat(70 * 1024) }),
    );
    expect(huge?.code).toBe(Code.ResourceExhausted);
  });

  it("is listed by reflection beside the API", async () => {
    const [answer] = await reflect("v1", `127.0.0.1:${server.app.port}`, [{ list_services: "" }]);
    const names = answer?.list_services_response?.service.map((s) => s.name) ?? [];
    expect(names).toContain("platform.sts.v1.SecurityTokenService");
    expect(names).toContain("platform.iam.v2beta1.GroupsService");
  });
});

describe("the per-address limit is one for both doors", () => {
  let limited: TestServer;
  let limitedIdentity: string;
  beforeAll(async () => {
    limited = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true", PLATFORM_STS_RATE_PER_ADDRESS: "2" });
    const g = await restClient(limited.url, limited.token)("POST", "/iam/v2beta1/groups", { name: "sts-limited" });
    limitedIdentity = await makeIdentity(limited, g.body["uid"] as string);
  });
  afterAll(async () => {
    await limited?.stop();
  });

  it("counts HTTP and RPC exchanges from one address together: the third is 429 / RESOURCE_EXHAUSTED on either", async () => {
    const aud = limited.app.urls.baseUrl;
    const token = await oidcToken(limited.app.urls.authUrl);
    const http = await fetch(`${limited.url}/sts/exchange`, {
      method: "POST",
      headers: { "content-type": FORM },
      body: new URLSearchParams({ aud, identity: limitedIdentity, subject_token: token }),
    });
    expect(http.status).toBe(200);
    const client = connectClient(SecurityTokenService, limited.url, "");
    await client.exchangeToken({ audiences: [aud], identity: limitedIdentity, subjectToken: token });
    const rpc = await client.exchangeToken({ audiences: [aud], identity: limitedIdentity, subjectToken: token }).catch((e) => e);
    expect((rpc as ConnectError).code).toBe(Code.ResourceExhausted);
    const again = await fetch(`${limited.url}/sts/exchange?aud=${encodeURIComponent(aud)}&identity=${limitedIdentity}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(again.status).toBe(429);
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
