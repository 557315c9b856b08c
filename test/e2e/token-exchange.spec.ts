import http from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newChildUid, schema } from "../../src/db/index.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { startOidcProvider, type TestOidcProvider } from "../support/oidc-provider.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

let server: TestServer;
let provider: TestOidcProvider;
let other: TestOidcProvider;
let groupUid: string;

beforeAll(async () => {
  provider = await startOidcProvider(["workload-a", "workload-b"]);
  other = await startOidcProvider(["workload-a"]);
  server = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true" });
  const g = await restClient(server.url, server.token)("POST", "/iam/v2beta1/groups", { name: "sts-org" });
  groupUid = g.body["uid"] as string;
});
afterAll(async () => {
  await server?.stop();
  await provider?.stop();
  await other?.stop();
});

interface ClaimMatch {
  claimAudiencePattern?: string;
  claimIssuer?: string;
  claimSubject?: string;
  claimIssuerPattern?: string;
  claimSubjectPattern?: string;
  claimAudience?: string;
}

/**
 * An identity row written directly (the API refuses some of these shapes): in the test's group of
 * `target` by default, or at `parent` (null: the root level, with the `uid` given).
 */
async function makeIdentity(
  match: ClaimMatch,
  target: TestServer = server,
  parent: string | null = groupUid,
  rootUid = "",
): Promise<string> {
  const now = target.clock.now();
  const uid = parent === null ? rootUid : newChildUid(parent);
  await target.app.database.db.insert(schema.identities).values({
    uid,
    parentUid: parent,
    name: `workload ${uid.slice(-6)}`,
    ...match,
    lastSeenTime: new Date(now.getTime() - 60_000),
    createTime: now,
    updateTime: now,
  });
  return uid;
}

async function exchange(identity: string, token: string | undefined, aud = server.app.urls.baseUrl, method = "GET") {
  const url = `${server.url}/sts/exchange?aud=${encodeURIComponent(aud)}&identity=${encodeURIComponent(identity)}`;
  const res = await fetch(url, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as JsonObject };
}

const REJECTED = {
  code: 16,
  message: "Unauthenticated: the token was not accepted for this identity",
};

describe("token exchange (/sts/exchange)", () => {
  it("trades a workload token that matches the identity for a one-hour API token", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const before = (await server.app.database.db.select().from(schema.identities).where(eq(schema.identities.uid, identity)))[0]!;
    const res = await exchange(identity, await provider.workloadToken("workload-a", server.app.urls.authUrl));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const token = res.body["token"] as string;
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({ sub: identity, aud: server.app.urls.baseUrl, iss: server.app.urls.authUrl });
    expect(claims.exp! - claims.iat!).toBe(3600);
    expect(new Date(res.body["expiry"] as string).getTime()).toBe(claims.exp! * 1000);
    const list = await restClient(server.url, token)("GET", "/iam/v2beta1/groups");
    expect(list.status).toBe(200);
    const after = (await server.app.database.db.select().from(schema.identities).where(eq(schema.identities.uid, identity)))[0]!;
    expect(after.lastSeenTime!.getTime()).toBeGreaterThan(before.lastSeenTime!.getTime());
  });

  it("accepts POST and the registry audience", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const res = await exchange(
      identity,
      await provider.workloadToken("workload-a", server.app.urls.authUrl),
      server.app.urls.registryAudience,
      "POST",
    );
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body["token"] as string).aud).toBe(server.app.urls.registryAudience);
  });

  it("matches anchored subject and issuer patterns", async () => {
    const port = new URL(provider.issuer).port;
    const byPattern = await makeIdentity({ claimIssuerPattern: `http://127\\.0\\.0\\.1:${port}`, claimSubjectPattern: "workload-[ab]" });
    expect((await exchange(byPattern, await provider.workloadToken("workload-b", server.app.urls.authUrl))).status).toBe(200);
    const unanchored = await makeIdentity({ claimIssuer: provider.issuer, claimSubjectPattern: "workload" });
    expect((await exchange(unanchored, await provider.workloadToken("workload-a", server.app.urls.authUrl))).body).toMatchObject(REJECTED);
  });

  it("checks the audience when the identity names one", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a", claimAudience: "urn:other" });
    expect((await exchange(identity, await provider.workloadToken("workload-a", server.app.urls.authUrl))).status).toBe(401);
    expect((await exchange(identity, await provider.workloadToken("workload-a", "urn:other"))).status).toBe(200);
  });

  it("refuses a token from the same issuer minted for another application (identity names no audience)", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const foreign = await exchange(identity, await provider.workloadToken("workload-a", "https://some-other-app.example"));
    expect(foreign.status).toBe(401);
    expect(foreign.body).toMatchObject(REJECTED);
    // The auth URL as configured, with or without a trailing slash, is this service's audience.
    const slash = await exchange(identity, await provider.workloadToken("workload-a", `${server.app.urls.authUrl}/`));
    expect(slash.status, JSON.stringify(slash.body)).toBe(200);
    // The API base URL is what a caller asks for, not what its OIDC token must be for.
    expect((await exchange(identity, await provider.workloadToken("workload-a", `${server.app.urls.authUrl}/other`))).status).toBe(401);
  });

  it("matches claim_match.audience_pattern against every aud of the token", async () => {
    const identity = await makeIdentity({
      claimIssuer: provider.issuer,
      claimSubject: "workload-a",
      claimAudiencePattern: "urn:deploy:(staging|prod)",
    });
    expect((await exchange(identity, await provider.workloadToken("workload-a", "urn:deploy:prod"))).status).toBe(200);
    expect((await exchange(identity, await provider.workloadToken("workload-a", "urn:deploy:prod:other"))).status).toBe(401);
    expect((await exchange(identity, await provider.workloadToken("workload-a", server.app.urls.authUrl))).status).toBe(401);
  });

  it("never lets a root-level identity (bootstrap, people signed in with a browser) be assumed", async () => {
    const person = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" }, server, null, "0123456789abcdef");
    const token = await provider.workloadToken("workload-a", server.app.urls.authUrl);
    const before = provider.requests();
    const res = await exchange(person, token);
    expect(res.status).toBe(400);
    expect(res.body["message"]).toBe("Invalid argument: identity: is not the uid of an identity held by a group");
    expect(provider.requests()).toBe(before);
  });

  it("a stored issuer pattern that leaves the host open allows nothing: 401, and no issuer is contacted", async () => {
    // Written before patterns had to fix scheme and host; the API refuses these now (identities.spec.ts).
    const token = await provider.workloadToken("workload-a", server.app.urls.authUrl);
    const before = provider.requests();
    for (const pattern of ["http://127\\.0\\.0\\.1:\\d+", "http://.*", "(a+)+"]) {
      const identity = await makeIdentity({ claimIssuerPattern: pattern, claimSubject: "workload-a" });
      expect((await exchange(identity, token)).body, pattern).toMatchObject(REJECTED);
    }
    expect(provider.requests()).toBe(before);
  });

  it("matches patterns in linear time: (a+)+ against a hostile iss does not stall the server", async () => {
    const identity = await makeIdentity({ claimIssuerPattern: "http://127\\.0\\.0\\.1:1/(a+)+", claimSubject: "x" });
    const unsigned = (iss: string) =>
      `${Buffer.from('{"alg":"RS256","typ":"JWT"}').toString("base64url")}.${Buffer.from(JSON.stringify({ iss, sub: "x" })).toString("base64url")}.c2ln`;
    for (const path of [`${"a".repeat(34)}!`, `${"a".repeat(10_000)}!`, `${"a".repeat(2000)}!`]) {
      const iss = `http://127.0.0.1:1/${path}`;
      const started = performance.now();
      const [res, health] = await Promise.all([exchange(identity, unsigned(iss)), fetch(`${server.url}/healthz`)]);
      expect(res.status).toBe(401);
      expect(health.status).toBe(200);
      // A backtracking engine takes minutes on the 34-character case; RE2 takes well under a second.
      expect(performance.now() - started).toBeLessThan(5_000);
    }
  });

  it("refuses NUL and malformed uids in the query with a BadRequest naming the field, before any lookup", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const cases: [string, string, string][] = [
      ["identity", `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=%00`, "identity"],
      ["identity", `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${identity}%00`, "identity"],
      ["aud", `${server.url}/sts/exchange?aud=a%00b&identity=${identity}`, "aud"],
      [
        "identity",
        `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${"a".repeat(5000)}`,
        "identity",
      ],
      ["identity", `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=%ED%A0%80`, "identity"],
    ];
    for (const [label, url, field] of cases) {
      const res = await fetch(url, { headers: { authorization: "Bearer x.y.z" } });
      const body = (await res.json()) as JsonObject;
      expect(res.status, label).toBe(400);
      expect(body["code"], label).toBe(3);
      const badRequest = (body["details"] as JsonObject[]).find((d) => String(d["@type"]).endsWith("BadRequest"));
      expect((badRequest!["fieldViolations"] as JsonObject[])[0]?.["field"], label).toBe(field);
    }
  });

  it("answers every refusal the same way: wrong identity, subject, signature, issuer or expiry", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const good = await provider.workloadToken("workload-a", server.app.urls.authUrl);
    const [h, p] = good.split(".");
    const cases = {
      "unknown identity": await exchange(newChildUid(groupUid), good),
      "other subject": await exchange(identity, await provider.workloadToken("workload-b", server.app.urls.authUrl)),
      "bad signature": await exchange(identity, `${h}.${p}.${Buffer.from("nope").toString("base64url")}`),
      "other issuer": await exchange(identity, await other.workloadToken("workload-a", server.app.urls.authUrl)),
      "alg none": await exchange(identity, `${Buffer.from('{"alg":"none"}').toString("base64url")}.${p}.`),
      "no token": await exchange(identity, undefined),
    };
    for (const [label, res] of Object.entries(cases)) {
      expect(res.status, label).toBe(401);
      expect(res.body, label).toMatchObject(REJECTED);
      expect((res.body["details"] as JsonObject[])[0], label).toMatchObject({ reason: "UNAUTHENTICATED", domain: "sts.localhost" });
    }
    server.clock.advance(15 * 60 * 1000);
    expect((await exchange(identity, good)).body).toMatchObject(REJECTED);
    await server.renewToken();
  });

  it("contacts only the identity's configured issuer", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const token = await other.workloadToken("workload-a", server.app.urls.authUrl);
    const before = other.requests();
    expect((await exchange(identity, token)).status).toBe(401);
    expect((await exchange(newChildUid(groupUid), token)).status).toBe(401);
    expect(other.requests()).toBe(before);
  });

  it("refuses a missing or foreign audience parameter with INVALID_ARGUMENT", async () => {
    const identity = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" });
    const token = await provider.workloadToken("workload-a", server.app.urls.authUrl);
    for (const aud of ["", "https://evil.example"]) {
      const res = await exchange(identity, token, aud);
      expect(res.status).toBe(400);
      expect(res.body["code"]).toBe(3);
    }
  });

  it("survives an issuer that answers with a huge document", async () => {
    const huge = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(`{"issuer": "${"x".repeat(2 * 1024 * 1024)}"}`);
    });
    await new Promise<void>((resolve) => huge.listen(0, "127.0.0.1", () => resolve()));
    try {
      const issuer = `http://127.0.0.1:${(huge.address() as AddressInfo).port}`;
      const identity = await makeIdentity({ claimIssuer: issuer, claimSubject: "workload-a" });
      const res = await exchange(identity, await provider.workloadToken("workload-a", server.app.urls.authUrl));
      expect(res.body).toMatchObject(REJECTED);
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    } finally {
      huge.closeAllConnections();
      huge.close();
    }
  });
});

describe("token exchange without PLATFORM_ALLOW_INSECURE_ISSUERS", () => {
  it("never contacts an http issuer", async () => {
    // The shared server: it runs with the default settings, insecure issuers refused.
    const strict = await sharedServer();
    const g = await restClient(strict.url, strict.token)("POST", "/iam/v2beta1/groups", { name: "strict" });
    const uid = await makeIdentity({ claimIssuer: provider.issuer, claimSubject: "workload-a" }, strict, g.body["uid"] as string);
    const token = await provider.workloadToken("workload-a", server.app.urls.authUrl);
    const before = provider.requests();
    const res = await fetch(`${strict.url}/sts/exchange?aud=${encodeURIComponent(strict.app.urls.baseUrl)}&identity=${uid}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(401);
    expect(provider.requests()).toBe(before);
  });
});
