import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, exportJWK, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newChildUid, schema } from "../../src/db/index.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { startTestServer, type TestServer } from "../support/server.js";

// docs/security.md, "Outbound budgets": the deployment's sign-in, each organization's identity
// providers and each organization's exchange issuers spend shares of the egress guard of their
// own, so anonymous token exchanges naming slow issuers cannot stop anyone's sign-in. Every
// issuer here is a local server on 127.0.0.1 (PLATFORM_ALLOW_INSECURE_ISSUERS).

const CALLBACK = "http://127.0.0.1:9/callback";
const CLIENT_ID = "platform";

interface Local {
  issuer: string;
  requests(): number;
  stop(): Promise<void>;
}

async function listen(handler: http.RequestListener): Promise<{ issuer: string; server: http.Server }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { issuer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const stopper = (server: http.Server) => () =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** An issuer that takes every request and never answers (until it stops): `open()` are held now. */
async function slowIssuer(): Promise<Local & { open(): number }> {
  let count = 0;
  let open = 0;
  const { issuer, server } = await listen((req, res) => {
    count++;
    open++;
    res.on("close", () => open--);
    req.resume();
  });
  return { issuer, requests: () => count, open: () => open, stop: stopper(server) };
}

/** An issuer that answers 404 to everything. */
async function brokenIssuer(): Promise<Local> {
  let count = 0;
  const { issuer, server } = await listen((_req, res) => {
    count++;
    res.writeHead(404).end();
  });
  return { issuer, requests: () => count, stop: stopper(server) };
}

interface FakeIdp extends Local {
  /** What `watch()` read when each discovery document was asked for. */
  seenAtDiscovery: number[];
  /** A workload token of this issuer for the token exchange. */
  workloadToken(sub: string, aud: string): Promise<string>;
  /** Token requests with the code "slow", held unanswered now (until the server gives up on them). */
  heldTokenRequests(): number;
  /** The most of them held at once. */
  mostHeldTokenRequests(): number;
}

/**
 * A small OpenID provider: discovery, keys, and a token endpoint whose code is the nonce and
 * subject, so a test can run the whole authorization code flow without a browser. `watch` is
 * read at each discovery request (how many slow requests were held right then). The code "slow"
 * is never answered.
 */
async function fakeIdp(watch: () => number): Promise<FakeIdp> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256", use: "sig" };
  let count = 0;
  let held = 0;
  let mostHeld = 0;
  const seenAtDiscovery: number[] = [];
  let issuer = "";
  const sign = (claims: JsonObject) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer(issuer)
      .setIssuedAt()
      .setExpirationTime("5m")
      .sign(privateKey);
  const json = (res: http.ServerResponse, body: unknown) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const listening = await listen((req, res) => {
    count++;
    const path = new URL(req.url ?? "/", issuer).pathname;
    if (path === "/.well-known/openid-configuration") {
      seenAtDiscovery.push(watch());
      return json(res, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ["code"],
        subject_types_supported: ["public"],
        id_token_signing_alg_values_supported: ["ES256"],
      });
    }
    if (path === "/jwks") return json(res, { keys: [jwk] });
    if (path === "/token" && req.method === "POST") {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        const code = new URLSearchParams(body).get("code") ?? "";
        if (code === "slow") {
          held++;
          mostHeld = Math.max(mostHeld, held);
          res.on("close", () => held--);
          return;
        }
        const { nonce, sub } = JSON.parse(Buffer.from(code, "base64url").toString()) as { nonce: string; sub: string };
        void sign({ sub, aud: CLIENT_ID, nonce, email: `${sub}@example.com`, email_verified: true }).then((idToken) =>
          json(res, { access_token: "opaque", token_type: "Bearer", expires_in: 300, id_token: idToken }),
        );
      });
      return;
    }
    res.writeHead(404).end();
  });
  issuer = listening.issuer;
  return {
    issuer,
    requests: () => count,
    seenAtDiscovery,
    workloadToken: (sub, aud) => sign({ sub, aud }),
    heldTokenRequests: () => held,
    mostHeldTokenRequests: () => mostHeld,
    stop: stopper(listening.server),
  };
}

/** A person's whole sign-in (`/oauth`, the provider, `/oauth/callback`); the CLI callback's token or error. */
async function signIn(
  target: TestServer,
  person: string,
  params: Record<string, string> = {},
): Promise<{ token: string | null; error: string | null }> {
  const url = new URL(`${target.app.urls.authUrl}/oauth`);
  url.search = new URLSearchParams({ redirect: CALLBACK, state: randomBytes(6).toString("hex"), ...params }).toString();
  const start = await fetch(url, { redirect: "manual" });
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get("location")!);
  if (authorize.origin + authorize.pathname === CALLBACK) return { token: null, error: authorize.searchParams.get("error") };
  const cookie = start.headers
    .getSetCookie()
    .map((c) => c.split(";")[0])
    .join("; ");
  const code = Buffer.from(JSON.stringify({ nonce: authorize.searchParams.get("nonce"), sub: person })).toString("base64url");
  const back = new URL(`${target.app.urls.authUrl}/oauth/callback`);
  back.search = new URLSearchParams({ code, state: authorize.searchParams.get("state") ?? "" }).toString();
  const done = await fetch(back, { redirect: "manual", headers: { cookie } });
  const result = new URL(done.headers.get("location")!);
  return { token: result.searchParams.get("token"), error: result.searchParams.get("error") };
}

/** A token naming `iss`, never verified: fetching the issuer's keys is what it costs the server. */
function unsignedToken(iss: string): string {
  const part = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url");
  return `${part({ alg: "ES256", kid: "k1" })}.${part({ iss, sub: "x", exp: Math.floor(Date.now() / 1000) + 600 })}.c2ln`;
}

async function exchange(target: TestServer, identity: string, token: string) {
  const url = `${target.url}/sts/exchange?aud=${encodeURIComponent(target.app.urls.baseUrl)}&identity=${encodeURIComponent(identity)}`;
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as JsonObject };
}

async function ok(p: Promise<{ status: number; body: JsonObject }>): Promise<JsonObject> {
  const res = await p;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let waited = 0; !condition(); waited += 20) {
    if (waited > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("outbound budgets: anonymous exchanges naming slow issuers", () => {
  let server: TestServer;
  let slow: Awaited<ReturnType<typeof slowIssuer>>;
  let upstream: FakeIdp;
  let orgIdp: FakeIdp;
  let workloads: FakeIdp;
  let broken: Local;
  const admin = () => restClient(server.url, server.token);
  const newOrg = async (name: string) =>
    (await ok(admin()("POST", "/iam/v2beta1/groups", { name: `${name}-${randomBytes(3).toString("hex")}` })))["uid"] as string;
  const newIdentity = async (org: string, claimMatch: JsonObject) =>
    (await ok(admin()("POST", `/iam/v2beta1/identities/${org}`, { name: "ci", claimMatch })))["uid"] as string;

  beforeAll(async () => {
    slow = await slowIssuer();
    upstream = await fakeIdp(() => slow.open());
    orgIdp = await fakeIdp(() => slow.open());
    workloads = await fakeIdp(() => slow.open());
    broken = await brokenIssuer();
    server = await startTestServer({
      PLATFORM_ALLOW_INSECURE_ISSUERS: "true",
      PLATFORM_OIDC_ISSUER: upstream.issuer,
      PLATFORM_OIDC_CLIENT_ID: CLIENT_ID,
      PLATFORM_OIDC_CLIENT_SECRET: "upstream-secret",
      // The organization's provider is on this machine: no page before it (browser-login.spec tests it).
      PLATFORM_TRUSTED_IDP_HOSTS: "127.0.0.1",
    });
  });
  afterAll(async () => {
    await server?.stop();
    await Promise.all([slow, upstream, orgIdp, workloads, broken].map((s) => s?.stop()));
  });

  it("while 20 exchanges hold slow issuers, people still sign in (upstream and an organization's IdP) and another organization's exchange works", async () => {
    const attacker = await newOrg("attacker");
    const slowPattern = `${slow.issuer.replace(/\./g, "\\.")}/.*`;
    const target = await newIdentity(attacker, { issuerPattern: slowPattern, subject: "x" });
    const sso = await newOrg("sso");
    await ok(
      admin()("POST", `/iam/v2beta1/identityProviders/${sso}`, {
        name: "sso",
        oidc: { issuer: orgIdp.issuer, clientId: CLIENT_ID, clientSecret: "org-secret" },
      }),
    );
    const other = await newOrg("other");
    const robot = await newIdentity(other, { issuer: workloads.issuer, subject: "deploy" });

    // Twenty anonymous calls, each naming another slow issuer of the pattern's host.
    const attack = Array.from({ length: 20 }, (_, i) => exchange(server, target, unsignedToken(`${slow.issuer}/t${i}`)));
    await until(() => slow.requests() >= 4, "the slow issuer to be called");

    const person = await signIn(server, "alice");
    expect(person, "sign-in through the deployment's upstream").toMatchObject({ error: null });
    expect(person.token).toBeTruthy();
    const member = await signIn(server, "bob", { org: sso });
    expect(member, "sign-in through the organization's identity provider").toMatchObject({ error: null });
    expect(member.token).toBeTruthy();
    const workload = await exchange(server, robot, await workloads.workloadToken("deploy", server.app.urls.authUrl));
    expect(workload.status, JSON.stringify(workload.body)).toBe(200);
    // Each of them went out while the attacker's requests were held.
    for (const idp of [upstream, orgIdp, workloads]) expect(idp.seenAtDiscovery[0]).toBe(4);

    // The attacker's organization got its own share (4), no more: the rest failed fast, unsent,
    // told to retry (429) since nothing was decided about their tokens; the 4 timed out (401).
    expect(slow.requests()).toBe(4);
    const answers = await Promise.all(attack);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(16);
    expect(answers.filter((a) => a.status === 401)).toHaveLength(4);
    const busy = answers.find((a) => a.status === 429)!;
    expect(busy.body["code"]).toBe(8);
    expect(busy.retryAfter).toBe("5");
    const violation = (busy.body["details"] as JsonObject[]).find((d) => String(d["@type"]).endsWith("QuotaFailure"))?.["violations"];
    expect(violation).toMatchObject([{ subject: `organization:${attacker}` }]);
    expect(slow.requests()).toBe(4);
  });

  it("remembers an issuer that failed: the next exchanges naming it fail without going out, until the memory expires", async () => {
    const org = await newOrg("broken");
    const identity = await newIdentity(org, { issuer: broken.issuer, subject: "x" });
    const token = unsignedToken(broken.issuer);
    expect((await exchange(server, identity, token)).status).toBe(401);
    const after = broken.requests();
    expect(after).toBe(1); // discovery, answered 404
    for (let i = 0; i < 3; i++) expect((await exchange(server, identity, token)).status).toBe(401);
    expect(broken.requests()).toBe(after);
    server.clock.advance(31_000);
    expect((await exchange(server, identity, token)).status).toBe(401);
    expect(broken.requests()).toBe(after + 1);
    await server.renewToken();
  });

  it("remembers an identity provider whose discovery failed: the next sign-ins fail without going out, until the memory expires", async () => {
    const down = await brokenIssuer();
    try {
      const org = await newOrg("down");
      await ok(
        admin()("POST", `/iam/v2beta1/identityProviders/${org}`, {
          name: "sso",
          oidc: { issuer: down.issuer, clientId: CLIENT_ID, clientSecret: "s" },
        }),
      );
      expect(await signIn(server, "carol", { org })).toEqual({ token: null, error: "upstream_error" });
      expect(down.requests()).toBe(1);
      for (let i = 0; i < 3; i++) expect(await signIn(server, "carol", { org })).toEqual({ token: null, error: "upstream_error" });
      expect(down.requests()).toBe(1);
      server.clock.advance(31_000);
      expect(await signIn(server, "carol", { org })).toEqual({ token: null, error: "upstream_error" });
      expect(down.requests()).toBe(2);
    } finally {
      await down.stop();
    }
  });
});

describe("/sts/exchange rate limits", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({ PLATFORM_STS_RATE_PER_ADDRESS: "8", PLATFORM_STS_RATE_PER_IDENTITY: "2" });
  });
  afterAll(() => server?.stop());

  /** An identity with no issuer: every exchange is refused without going out. */
  async function identity(org: string): Promise<string> {
    const now = server.clock.now();
    const uid = newChildUid(org);
    await server.app.database.db
      .insert(schema.identities)
      .values({ uid, parentUid: org, name: "limited", claimSubject: "x", createTime: now, updateTime: now });
    return uid;
  }

  function quotaViolation(body: JsonObject): JsonObject | undefined {
    const detail = (body["details"] as JsonObject[]).find((d) => String(d["@type"]).endsWith("google.rpc.QuotaFailure"));
    return (detail?.["violations"] as JsonObject[] | undefined)?.[0];
  }

  it("answers 429 RESOURCE_EXHAUSTED with Retry-After and a QuotaFailure: per identity (existing or not), then per client address", async () => {
    const org = (await ok(restClient(server.url, server.token)("POST", "/iam/v2beta1/groups", { name: "limited" })))["uid"] as string;
    const [x, y] = [await identity(org), await identity(org)];
    const token = unsignedToken("https://issuer.invalid");
    expect((await exchange(server, x, token)).status).toBe(401);
    expect((await exchange(server, x, token)).status).toBe(401);
    const byIdentity = await exchange(server, x, token);
    expect(byIdentity.status).toBe(429);
    expect(byIdentity.body["code"]).toBe(8);
    expect(byIdentity.body["message"]).toMatch(
      /^Resource exhausted: too many refused token exchanges for this identity: at most 2 per 60 s; retry in \d+ s$/,
    );
    expect(quotaViolation(byIdentity.body)).toMatchObject({ subject: `identity:${x}` });
    expect(Number(byIdentity.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(byIdentity.retryAfter)).toBeLessThanOrEqual(60);

    // Another identity has its own count. One that does not exist is counted the same way, so
    // a 429 tells nothing about which identities exist.
    expect((await exchange(server, y, token)).status).toBe(401);
    const missing = newChildUid(org);
    expect((await exchange(server, missing, token)).status).toBe(401);
    expect((await exchange(server, missing, token)).status).toBe(401);
    const unknown = await exchange(server, missing, token);
    expect(unknown.status).toBe(429);
    expect(quotaViolation(unknown.body)).toMatchObject({ subject: `identity:${missing}` });
    // The address's count (8 a minute) has one call left.
    expect((await exchange(server, y, token)).status).toBe(401);
    const byAddress = await exchange(server, y, token);
    expect(byAddress.status).toBe(429);
    expect(quotaViolation(byAddress.body)).toMatchObject({ subject: "clientip:127.0.0.1" });
    expect(byAddress.body["message"]).toMatch(
      /^Resource exhausted: too many token exchanges from this address: at most 8 per 60 s; retry in \d+ s$/,
    );
    expect(Number(byAddress.retryAfter)).toBeGreaterThanOrEqual(1);
    // Counted before anything else: even a malformed call is answered 429 now.
    expect((await exchange(server, "nonsense", token)).status).toBe(429);
  });
});

/** A GET from the loopback address `from` (127.0.0.0/8: each is another client to the limits). */
function getFrom(
  from: string,
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { localAddress: from, headers, agent: false }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** `/oauth` from `from`: the login cookie and the provider's authorization URL. */
async function startFrom(target: TestServer, from: string): Promise<{ cookie: string; authorize: URL }> {
  const url = new URL(`${target.app.urls.authUrl}/oauth`);
  url.search = new URLSearchParams({ redirect: CALLBACK, state: randomBytes(6).toString("hex") }).toString();
  const start = await getFrom(from, url.href);
  expect(start.status, start.body).toBe(302);
  const cookies = ([] as string[]).concat(start.headers["set-cookie"] ?? []);
  return { cookie: cookies.map((c) => c.split(";")[0]).join("; "), authorize: new URL(start.headers.location!) };
}

/** `/oauth/callback` from `from` with `code`: the CLI callback's token or error. */
async function callbackFrom(target: TestServer, from: string, login: { cookie: string; authorize: URL }, code: string) {
  const back = new URL(`${target.app.urls.authUrl}/oauth/callback`);
  back.search = new URLSearchParams({ code, state: login.authorize.searchParams.get("state") ?? "" }).toString();
  const done = await getFrom(from, back.href, { cookie: login.cookie });
  expect(done.status, done.body).toBe(302);
  const result = new URL(done.headers.location!);
  return {
    token: result.searchParams.get("token"),
    error: result.searchParams.get("error"),
    description: result.searchParams.get("error_description"),
  };
}

describe("sign-in per client address: a share of the sign-in budget, and a rate", () => {
  let server: TestServer;
  let upstream: FakeIdp;

  beforeAll(async () => {
    upstream = await fakeIdp(() => 0);
    server = await startTestServer({
      PLATFORM_ALLOW_INSECURE_ISSUERS: "true",
      PLATFORM_OIDC_ISSUER: upstream.issuer,
      PLATFORM_OIDC_CLIENT_ID: CLIENT_ID,
      PLATFORM_OIDC_CLIENT_SECRET: "upstream-secret",
      PLATFORM_LOGIN_RATE_PER_ADDRESS: "40",
    });
  });
  afterAll(async () => {
    await server?.stop();
    await upstream?.stop();
  });

  it("one address holding 16 slow callbacks gets 2 token requests out, and a person at another address still signs in", async () => {
    const attacker = "127.0.0.2";
    const logins = await Promise.all(Array.from({ length: 16 }, () => startFrom(server, attacker)));
    const attack = logins.map((login) => callbackFrom(server, attacker, login, "slow"));
    await until(() => upstream.heldTokenRequests() >= 2, "the attacker's token requests to be held");

    const person = await startFrom(server, "127.0.0.9");
    const code = Buffer.from(JSON.stringify({ nonce: person.authorize.searchParams.get("nonce"), sub: "alice" })).toString("base64url");
    const signedIn = await callbackFrom(server, "127.0.0.9", person, code);
    expect(signedIn, "the person's sign-in").toMatchObject({ error: null });
    expect(signedIn.token).toBeTruthy();

    // The attacker's address held 2 of the deployment's 16; the rest failed fast, unsent.
    const answers = await Promise.all(attack);
    expect(upstream.mostHeldTokenRequests()).toBe(2);
    expect(answers.every((a) => a.error === "upstream_error")).toBe(true);
    expect(answers.filter((a) => /too many sign-ins are in progress/.test(a.description ?? ""))).toHaveLength(14);
  });

  it("answers starts and callbacks over PLATFORM_LOGIN_RATE_PER_ADDRESS with 429 and a page saying so; other addresses go on", async () => {
    const from = "127.0.0.3";
    const logins = [];
    for (let i = 0; i < 40; i++) logins.push(await startFrom(server, from));
    const url = new URL(`${server.app.urls.authUrl}/oauth`);
    url.search = new URLSearchParams({ redirect: CALLBACK, state: "s" }).toString();
    const refused = await getFrom(from, url.href);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect(refused.headers["content-type"]).toMatch(/^text\/html/);
    expect(refused.body).toContain("Too many sign-in attempts from this address");
    expect(refused.headers["set-cookie"]).toBeUndefined();

    const back = new URL(`${server.app.urls.authUrl}/oauth/callback`);
    back.search = new URLSearchParams({ code: "x", state: logins[0]!.authorize.searchParams.get("state") ?? "" }).toString();
    const callback = await getFrom(from, back.href, { cookie: logins[0]!.cookie });
    expect(callback.status).toBe(429);
    expect(callback.body).toContain("Too many sign-in attempts from this address");

    await startFrom(server, "127.0.0.4");
  });
});

describe("/sts/exchange: strangers naming an identity cannot lock its workloads out", () => {
  let server: TestServer;
  let workloads: FakeIdp;
  let uncached: FakeIdp;

  beforeAll(async () => {
    workloads = await fakeIdp(() => 0);
    uncached = await fakeIdp(() => 0);
    server = await startTestServer({
      PLATFORM_ALLOW_INSECURE_ISSUERS: "true",
      PLATFORM_STS_RATE_PER_ADDRESS: "10",
      PLATFORM_STS_RATE_PER_IDENTITY: "20",
    });
  });
  afterAll(async () => {
    await server?.stop();
    await Promise.all([workloads, uncached].map((s) => s?.stop()));
  });

  const exchangeFrom = async (from: string, identity: string, token: string) => {
    const url = `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${encodeURIComponent(identity)}`;
    const res = await getFrom(from, url, { authorization: `Bearer ${token}` });
    return { status: res.status, body: JSON.parse(res.body) as JsonObject };
  };

  it("after refused exchanges from several addresses, the identity's valid token still gets a token; garbage naming an uncached issuer gets 429", async () => {
    const admin = restClient(server.url, server.token);
    const org = (await ok(admin("POST", "/iam/v2beta1/groups", { name: `victim-${randomBytes(3).toString("hex")}` })))["uid"] as string;
    const robot = (
      await ok(admin("POST", `/iam/v2beta1/identities/${org}`, { name: "ci", claimMatch: { issuer: workloads.issuer, subject: "deploy" } }))
    )["uid"] as string;
    const valid = () => workloads.workloadToken("deploy", server.app.urls.authUrl);
    // The workload exchanges as usual: its issuer's keys are in use.
    expect((await exchangeFrom("127.0.0.20", robot, await valid())).status).toBe(200);

    // 30 garbage calls from 3 addresses (10 each, their whole rate): 20 refused, then 429.
    const statuses: number[] = [];
    for (const from of ["127.0.0.21", "127.0.0.22", "127.0.0.23"]) {
      for (let i = 0; i < 10; i++) statuses.push((await exchangeFrom(from, robot, "x.y.z")).status);
    }

    // The workload still gets its token, from another address.
    const workload = await exchangeFrom("127.0.0.24", robot, await valid());
    expect(workload.status, JSON.stringify(workload.body)).toBe(200);
    expect(workload.body["token"]).toBeTruthy();
    expect(statuses.filter((s) => s === 401)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    // A token naming the cached issuer but not signed by it is refused, checked with the cached keys.
    expect((await exchangeFrom("127.0.0.24", robot, unsignedToken(workloads.issuer))).status).toBe(401);
    // One naming an issuer whose keys are not cached would need a request out: 429, nothing sent.
    const limited = await exchangeFrom("127.0.0.24", robot, unsignedToken(uncached.issuer));
    expect(limited.status).toBe(429);
    expect(limited.body["message"]).toMatch(/too many refused token exchanges for this identity/);
    expect(uncached.requests()).toBe(0);

    // An identity that does not exist is answered the same way: a 429 does not tell which exist.
    const missing = newChildUid(org);
    for (let i = 0; i < 20; i++) expect((await exchangeFrom(`127.0.1.${i}`, missing, "x.y.z")).status).toBe(401);
    expect((await exchangeFrom("127.0.1.30", missing, unsignedToken(workloads.issuer))).status).toBe(401);
    expect((await exchangeFrom("127.0.1.30", missing, unsignedToken(uncached.issuer))).status).toBe(429);
  });
});
