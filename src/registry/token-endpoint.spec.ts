// The polyfill @peculiar/x509 needs, before it loads (src/registry/registry-keys.ts says why).
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { and, eq } from "drizzle-orm";
import { decodeJwt, decodeProtectedHeader, jwtVerify, SignJWT, type CryptoKey } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testEventRecorder } from "../../test/support/event-recorder.js";
import type { JsonObject, RestClient } from "../../test/support/clients.js";
import { startOidcProvider, type TestOidcProvider } from "../../test/support/oidc-provider.js";
import type { TestServer } from "../../test/support/server.js";
import { sharedServerAsAdmin } from "../../test/support/shared-server.js";
import { ExchangeLimits, OidcIssuers, OutboundBudgets, PerMinuteLimit, type TokenExchangeDeps } from "../auth/index.js";
import { TOKEN_EXCHANGED_EVENT } from "../auth/token-exchange.js";
import { Grants } from "../authz/index.js";
import { newChildUid, schema } from "../db/index.js";
import { Egress } from "../egress/index.js";
import { Metrics } from "../server/metrics.js";
import { registryPathOf } from "./paths.js";
import type { RegistrySigner } from "./registry-keys.js";
import {
  MAX_SCOPES,
  registryTokenRealm,
  registryTokenRoute,
  type RegistryAccess,
  type RegistryTokenDeps,
  type RegistryTokenOutcome,
} from "./token-endpoint.js";

x509.cryptoProvider.set(globalThis.crypto);

let server: TestServer;
let admin: RestClient;
let provider: TestOidcProvider;
let signer: RegistrySigner & { publicKey: CryptoKey };
let endpoint: { url: string; close: () => Promise<void> };
let limited: { url: string; close: () => Promise<void> };
const refusals: string[] = [];
/** Outcomes reported by the main route and by the rate-limited one. */
const outcomes: RegistryTokenOutcome[] = [];
const limitedOutcomes: RegistryTokenOutcome[] = [];

/** A registry signing key with a self-signed certificate, as the registry's bundle would hold it. */
async function testSigner(): Promise<RegistrySigner & { publicKey: CryptoKey }> {
  const keys = (await globalThis.crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as {
    publicKey: CryptoKey;
    privateKey: CryptoKey;
  };
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=registry token test",
    notBefore: new Date(Date.now() - 86_400_000),
    notAfter: new Date(Date.now() + 86_400_000),
    keys,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
  });
  const x5c = [Buffer.from(cert.rawData).toString("base64")];
  return { publicKey: keys.publicKey, current: async () => ({ kid: "registry-test-key", sign: keys.privateKey, x5c }) };
}

function routeDeps(limit: PerMinuteLimit, reported: RegistryTokenOutcome[]): RegistryTokenDeps {
  const app = server.app;
  const egress = new Egress({ allowInsecure: true });
  const audiences = [app.urls.baseUrl, app.urls.registryAudience];
  const exchange: TokenExchangeDeps = {
    db: app.database.db,
    tokens: app.tokens,
    // The provider's tokens are stamped with the real time, whatever the server's test clock says.
    issuers: new OidcIssuers({ egress, clock: () => new Date() }),
    budgets: new OutboundBudgets(egress, {
      upstreamInFlight: 4,
      organizationInFlight: 4,
      organizationsInFlight: 8,
      signInInFlightPerAddress: 2,
    }),
    limits: new ExchangeLimits({ perAddress: 0, perIdentity: 0 }),
    audiences,
    authUrl: app.urls.authUrl,
    clock: server.clock.now,
    onRejected: (reason) => refusals.push(`exchange: ${reason}`),
    events: testEventRecorder(server.clock.now),
  };
  return {
    db: app.database.db,
    tokens: app.tokens,
    audiences,
    service: app.urls.registryAudience,
    authUrl: app.urls.authUrl,
    exchange,
    grantsOf: (uid) => Grants.load(app.database.db, uid),
    signer,
    limit,
    clock: server.clock.now,
    onRefused: (reason) => refusals.push(reason),
    onInternalError: (cause) => {
      throw cause;
    },
    onOutcome: (outcome) => reported.push(outcome),
  };
}

/** The route on a loopback port of its own, as the lead mounts it (method check included). */
async function serve(deps: RegistryTokenDeps): Promise<{ url: string; close: () => Promise<void> }> {
  const route = registryTokenRoute(deps);
  const listener = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (!route.methods.includes(req.method ?? "")) {
      res.writeHead(405).end();
      return;
    }
    void route.serve(req, res, url);
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(listener.address() as AddressInfo).port}/registry/token`,
    close: () =>
      new Promise<void>((resolve) => {
        listener.closeAllConnections();
        listener.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  ({ server, call: admin } = await sharedServerAsAdmin());
  provider = await startOidcProvider(["workload-a", "workload-b"]);
  signer = await testSigner();
  endpoint = await serve(routeDeps(new PerMinuteLimit(0, "too many registry token requests from this address"), outcomes));
  limited = await serve(routeDeps(new PerMinuteLimit(2, "too many registry token requests from this address"), limitedOutcomes));
});
afterAll(async () => {
  await endpoint?.close();
  await limited?.close();
  await provider?.stop();
});

const ok = async (method: string, path: string, body?: unknown): Promise<JsonObject> => {
  const res = await admin(method, path, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};

let count = 0;
const newOrg = async () => (await ok("POST", "/iam/v2beta1/groups", { name: `registry-token-${count++}` }))["uid"] as string;
const newGroup = async (parent: string) =>
  (await ok("POST", `/iam/v2beta1/groups/${parent}`, { name: `team-${count++}` }))["uid"] as string;
const newRepo = async (group: string, name: string) => (await ok("POST", `/registry/v2beta1/repos/${group}`, { name }))["uid"] as string;
const bind = (group: string, identityUid: string, roleUid: string) =>
  ok("POST", `/iam/v2beta1/roleBindings/${group}`, { identityUid, roleUid });

/** An identity in `org` bound to `role` there (none: no binding), and a platform API token of it. */
async function member(org: string, role?: string): Promise<{ uid: string; token: string }> {
  const uid = (await ok("POST", `/iam/v2beta1/identities/${org}`, { name: `member-${count++}` }))["uid"] as string;
  if (role) await bind(org, uid, role);
  return { uid, token: (await server.app.tokens.mint(uid, server.app.urls.baseUrl)).token };
}

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

interface Answer {
  status: number;
  body: JsonObject;
  headers: Headers;
  /** The server's clock (seconds) just before the request and just after the answer. */
  sent: number;
  answered: number;
}

const seconds = () => Math.floor(server.clock.now().getTime() / 1000);

async function answer(request: Promise<Response>): Promise<Answer> {
  const sent = seconds();
  const res = await request;
  return { status: res.status, body: (await res.json()) as JsonObject, headers: res.headers, sent, answered: seconds() };
}

/** GET with Basic credentials (none: no Authorization), the query built from `params` (repeats kept). */
async function get(params: [string, string][], auth?: string, base = endpoint.url): Promise<Answer> {
  const query = new URLSearchParams(params).toString();
  return answer(fetch(`${base}?${query}`, { headers: auth ? { authorization: auth } : {} }));
}

const service = () => server.app.urls.registryAudience;
const getToken = (auth: string | undefined, ...scopes: string[]) =>
  get([["service", service()], ["account", "someone"], ...scopes.map((s): [string, string] => ["scope", s])], auth);

async function post(form: Record<string, string> | string, contentType = "application/x-www-form-urlencoded"): Promise<Answer> {
  const body = typeof form === "string" ? form : new URLSearchParams(form).toString();
  return answer(fetch(endpoint.url, { method: "POST", headers: { "content-type": contentType }, body }));
}

/** The `access` claim of an accepted answer, after checking the answer and the token's signature and claims. */
async function accessOf(res: Answer, subject: string): Promise<RegistryAccess[]> {
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const token = res.body["token"] as string;
  expect(res.body["access_token"]).toBe(token);
  expect(res.body["expires_in"]).toBe(300);
  expect(Object.keys(res.body).sort()).toEqual(["access_token", "expires_in", "issued_at", "token"]);
  const header = decodeProtectedHeader(token);
  const { x5c } = await signer.current();
  expect(header).toEqual({ alg: "ES256", typ: "JWT", kid: "registry-test-key", x5c });
  // The registry trusts the key through the certificate in x5c: verify with that certificate's key.
  const cert = new x509.X509Certificate(header.x5c![0]!);
  const certKey = await cert.publicKey.export({ name: "ECDSA", namedCurve: "P-256" }, ["verify"]);
  const { payload } = await jwtVerify(token, certKey, {
    algorithms: ["ES256"],
    issuer: server.app.urls.authUrl,
    audience: service(),
    currentDate: server.clock.now(),
  });
  const iat = payload.iat!;
  expect(iat).toBeGreaterThanOrEqual(res.sent);
  expect(iat).toBeLessThanOrEqual(res.answered);
  expect(payload).toMatchObject({ sub: subject, aud: service(), nbf: iat, exp: iat + 300 });
  expect(payload.jti).toMatch(/^[0-9a-f-]{36}$/);
  expect(Object.keys(payload).sort()).toEqual(["access", "aud", "exp", "iat", "iss", "jti", "nbf", "sub"]);
  expect(res.body["issued_at"]).toBe(new Date(iat * 1000).toISOString().replace(/\.000Z$/, "Z"));
  return payload["access"] as RegistryAccess[];
}

function expectError(res: Answer, status: number, code: string, message: RegExp | string, oauth?: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get("cache-control")).toBe("no-store");
  const [error, ...more] = res.body["errors"] as JsonObject[];
  expect(more).toEqual([]);
  expect(error).toMatchObject({ code, detail: null });
  if (typeof message === "string") expect(error!["message"]).toBe(message);
  else expect(error!["message"]).toMatch(message);
  if (oauth) expect(res.body).toMatchObject({ error: oauth, error_description: error!["message"] });
  else expect(res.body["error"]).toBeUndefined();
  expect(res.headers.get("www-authenticate")).toBe(status === 401 ? `Basic realm="${registryTokenRealm(server.app.urls.authUrl)}"` : null);
}

const expectRefused = (res: Answer, oauth?: string) => expectError(res, 401, "UNAUTHORIZED", "the credentials were not accepted", oauth);

describe("registry token endpoint: credentials", () => {
  it("issues a signed registry token for Basic credentials holding a platform API token (GET)", async () => {
    const org = await newOrg();
    const person = await member(org, "registry.push");
    const path = registryPathOf(org, "library/nginx");
    // Docker's login asks for no scope: a token with an empty access list.
    expect(await accessOf(await getToken(basic("docker-user", person.token)), person.uid)).toEqual([]);
    const access = await accessOf(await getToken(basic("docker-user", person.token), `repository:${path}:pull,push`), person.uid);
    expect(access).toEqual([{ type: "repository", name: path, actions: ["pull", "push"] }]);
  });

  it("accepts a registry-audience platform token, and the identity's own uid as the user name", async () => {
    const org = await newOrg();
    const person = await member(org, "registry.pull");
    const registryToken = (await server.app.tokens.mint(person.uid, service())).token;
    const path = registryPathOf(org, "app");
    expect(await accessOf(await getToken(basic(person.uid, registryToken), `repository:${path}:pull`), person.uid)).toEqual([
      { type: "repository", name: path, actions: ["pull"] },
    ]);
  });

  it("refuses a user name that is another identity's uid, though the token is valid", async () => {
    const org = await newOrg();
    const person = await member(org, "registry.pull");
    const other = await member(org, "registry.pull");
    expectRefused(await getToken(basic(other.uid, person.token)));
  });

  it("answers the POST form: grant_type=password and grant_type=refresh_token, scopes space-separated and repeated", async () => {
    const org = await newOrg();
    const person = await member(org, "owner");
    const a = registryPathOf(org, "a");
    const b = registryPathOf(org, "b");
    const c = registryPathOf(org, "c");
    const form = new URLSearchParams({
      grant_type: "password",
      username: "ci",
      password: person.token,
      service: service(),
      client_id: "containerd",
    });
    form.append("scope", `repository:${a}:pull repository:${b}:push`);
    form.append("scope", `repository:${c}:delete`);
    expect(await accessOf(await post(form.toString()), person.uid)).toEqual([
      { type: "repository", name: a, actions: ["pull"] },
      { type: "repository", name: b, actions: ["push"] },
      { type: "repository", name: c, actions: ["delete"] },
    ]);
    const refreshed = await post({
      grant_type: "refresh_token",
      refresh_token: person.token,
      service: service(),
      scope: `repository:${a}:pull,push`,
    });
    expect(await accessOf(refreshed, person.uid)).toEqual([{ type: "repository", name: a, actions: ["pull", "push"] }]);
    // No refresh token is handed out, whatever the client asks for.
    expect(refreshed.body["refresh_token"]).toBeUndefined();
    expectRefused(await post({ grant_type: "password", username: "ci", password: "not-a-token", service: service() }), "invalid_grant");
    expectRefused(await post({ grant_type: "refresh_token", refresh_token: "not-a-token", service: service() }), "invalid_grant");
  });

  it("answers 401 with a Basic challenge and the registry's error shape for no or unaccepted credentials", async () => {
    expectError(await getToken(undefined), 401, "UNAUTHORIZED", "authentication required");
    expectRefused(await getToken(basic("docker-user", "garbage")));
    expectRefused(await getToken(basic("docker-user", "")));
    expectRefused(await getToken("Bearer abc.def.ghi"));
    expectRefused(await getToken("Basic !!!"));
    expectRefused(await getToken(`Basic ${Buffer.from("no colon").toString("base64")}`));
    // A root-level uid (a person) never takes an OIDC token; neither does a free-text user name.
    expectRefused(await getToken(basic("0123456789abcdef", "garbage")));
  });

  it("refuses a registry token (signed with the registry key), a forged token or a foreign-audience one as the password", async () => {
    const org = await newOrg();
    const person = await member(org, "registry.push");
    const issued = await getToken(basic("docker-user", person.token), `repository:${registryPathOf(org, "app")}:pull`);
    expect(issued.status).toBe(200);
    expectRefused(await getToken(basic("docker-user", issued.body["token"] as string)));
    expectRefused(await getToken(basic(person.uid, issued.body["token"] as string)));
    // Nor one with the platform's claims signed by any other key.
    const key = await signer.current();
    const now = Math.floor(server.clock.now().getTime() / 1000);
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: "ES256", kid: key.kid })
      .setIssuer(server.app.urls.authUrl)
      .setSubject(person.uid)
      .setAudience(server.app.urls.baseUrl)
      .setIssuedAt(now)
      .setExpirationTime(now + 60)
      .sign(key.sign);
    expectRefused(await getToken(basic("docker-user", forged)));
    // A platform token for an audience that is neither the API's nor the registry's.
    const foreign = (await server.app.tokens.mint(person.uid, "https://elsewhere.example")).token;
    expectRefused(await getToken(basic("docker-user", foreign)));
  });

  it("refuses the still-valid token of a deleted identity", async () => {
    const org = await newOrg();
    const robot = await member(org, "registry.push");
    expect((await getToken(basic("docker-user", robot.token))).status).toBe(200);
    await ok("DELETE", `/iam/v2beta1/identities/${robot.uid}`);
    expectRefused(await getToken(basic("docker-user", robot.token), `repository:${registryPathOf(org, "app")}:pull`));
    expect(refusals).toContain("the identity no longer exists");
  });
});

describe("registry token endpoint: OIDC tokens of workload identities", () => {
  /** A workload identity of `org` accepting the provider's tokens for `subject`, bound to `role` there. */
  async function workload(org: string, subject: string, role: string): Promise<string> {
    const now = server.clock.now();
    const uid = newChildUid(org);
    await server.app.database.db.insert(schema.identities).values({
      uid,
      parentUid: org,
      name: `ci ${count++}`,
      claimIssuer: provider.issuer,
      claimSubject: subject,
      lastSeenTime: now,
      createTime: now,
      updateTime: now,
    });
    await bind(org, uid, role);
    return uid;
  }

  const exchanges = async (uid: string) =>
    (
      await server.app.database.db
        .select()
        .from(schema.events)
        .where(and(eq(schema.events.subject, uid), eq(schema.events.type, TOKEN_EXCHANGED_EVENT)))
    ).map((e) => e.data);

  it("accepts an OIDC token the identity's claimMatch accepts, with the identity uid as user name (and records the exchange)", async () => {
    const org = await newOrg();
    const uid = await workload(org, "workload-a", "registry.push");
    const path = registryPathOf(org, "ci/app");
    const oidc = await provider.workloadToken("workload-a", server.app.urls.authUrl);
    expect(await accessOf(await getToken(basic(uid, oidc), `repository:${path}:pull,push`), uid)).toEqual([
      { type: "repository", name: path, actions: ["pull", "push"] },
    ]);
    const form = { grant_type: "password", username: uid, password: oidc, service: service(), scope: `repository:${path}:pull` };
    expect(await accessOf(await post(form), uid)).toEqual([{ type: "repository", name: path, actions: ["pull"] }]);
    expect(await exchanges(uid)).toEqual([
      { outcome: "accepted", audience: service() },
      { outcome: "accepted", audience: service() },
    ]);
  });

  it("refuses an OIDC token of another subject, of another audience, or under another user name", async () => {
    const org = await newOrg();
    const uid = await workload(org, "workload-a", "registry.push");
    const other = await workload(org, "workload-b", "registry.push");
    expectRefused(await getToken(basic(uid, await provider.workloadToken("workload-b", server.app.urls.authUrl))));
    expectRefused(await getToken(basic(uid, await provider.workloadToken("workload-a", "https://another-app.example"))));
    expectRefused(await getToken(basic(other, await provider.workloadToken("workload-a", server.app.urls.authUrl))));
    expectRefused(await getToken(basic("ci", await provider.workloadToken("workload-a", server.app.urls.authUrl))));
    // Refresh tokens are platform tokens only.
    const form = {
      grant_type: "refresh_token",
      username: uid,
      refresh_token: await provider.workloadToken("workload-a", server.app.urls.authUrl),
      service: service(),
    };
    expectRefused(await post(form), "invalid_grant");
    expect((await exchanges(uid)).map((d) => d["outcome"])).toEqual(["rejected"]);
  });
});

describe("registry token endpoint: scopes granted", () => {
  it("grants registry.pull its pull and drops push and delete, without an error", async () => {
    const org = await newOrg();
    const reader = await member(org, "registry.pull");
    const path = registryPathOf(org, "app");
    await newRepo(org, "app");
    expect(await accessOf(await getToken(basic("u", reader.token), `repository:${path}:pull,push,delete`), reader.uid)).toEqual([
      { type: "repository", name: path, actions: ["pull"] },
    ]);
    expect(await accessOf(await getToken(basic("u", reader.token), `repository:${path}:push`), reader.uid)).toEqual([
      { type: "repository", name: path, actions: [] },
    ]);
  });

  it("grants push where the repo exists with tag.create and tag.update, and where it does not only with repo.create too", async () => {
    const org = await newOrg();
    const role = (
      await ok("POST", `/iam/v2beta1/roles/${org}`, { name: "tagger", capabilities: ["tag.create", "tag.update", "repo.blobs.get"] })
    )["uid"] as string;
    const tagger = await member(org);
    await bind(org, tagger.uid, role);
    const createOnly = (
      await ok("POST", `/iam/v2beta1/roles/${org}`, { name: "creator", capabilities: ["tag.create", "repo.create", "repo.blobs.get"] })
    )["uid"] as string;
    const creator = await member(org);
    await bind(org, creator.uid, createOnly);
    const editor = await member(org, "editor");
    await newRepo(org, "exists");
    const exists = registryPathOf(org, "exists");
    const missing = registryPathOf(org, "missing/one");
    const scopes = [`repository:${exists}:pull,push`, `repository:${missing}:pull,push`];
    expect(await accessOf(await getToken(basic("u", tagger.token), ...scopes), tagger.uid)).toEqual([
      { type: "repository", name: exists, actions: ["pull", "push"] },
      { type: "repository", name: missing, actions: ["pull"] },
    ]);
    // tag.update is needed too: a push may move a tag.
    expect((await accessOf(await getToken(basic("u", creator.token), ...scopes), creator.uid)).map((a) => a.actions)).toEqual([
      ["pull"],
      ["pull"],
    ]);
    // editor holds repo.create and tag.*, but not repo.blobs.get (docs/design.md, "Built-in roles").
    expect((await accessOf(await getToken(basic("u", editor.token), ...scopes), editor.uid)).map((a) => a.actions)).toEqual([
      ["push"],
      ["push"],
    ]);
  });

  it("checks at the repo's own uid: a binding in a subgroup covers its repos, not its parent's", async () => {
    const org = await newOrg();
    const team = await newGroup(org);
    const dev = await member(org);
    await bind(team, dev.uid, "registry.push");
    await newRepo(team, "svc");
    await newRepo(org, "svc");
    const inTeam = registryPathOf(team, "svc");
    const inOrg = registryPathOf(org, "svc");
    expect(inTeam).toBe(`${team.replaceAll("/", "-")}/svc`);
    expect(
      await accessOf(
        await getToken(basic("u", dev.token), `repository:${inTeam}:pull,push,delete`, `repository:${inOrg}:pull,push,delete`),
        dev.uid,
      ),
    ).toEqual([
      { type: "repository", name: inTeam, actions: ["pull", "push", "delete"] },
      { type: "repository", name: inOrg, actions: [] },
    ]);
  });

  it("grants nothing below a uid that is not a group: a deleted group, a repo's, an identity's, one never made", async () => {
    const org = await newOrg();
    const owner = await member(org, "owner");
    const repo = await newRepo(org, "app");
    const gone = await newGroup(org);
    await ok("DELETE", `/iam/v2beta1/groups/${gone}`);
    const paths = [gone, repo, owner.uid, `${org}/0123456789abcdef`].map((uid) => registryPathOf(uid, "stash"));
    const asked = paths.map((p) => `repository:${p}:pull,push,delete`);
    expect(await accessOf(await getToken(basic("u", owner.token), ...asked), owner.uid)).toEqual(
      paths.map((name) => ({ type: "repository", name, actions: [] })),
    );
    // The organization itself, where the repo does not exist yet: push creates it.
    const fresh = registryPathOf(org, "stash");
    expect(await accessOf(await getToken(basic("u", owner.token), `repository:${fresh}:push`), owner.uid)).toEqual([
      { type: "repository", name: fresh, actions: ["push"] },
    ]);
  });

  it("gives an identity of another organization nothing", async () => {
    const org = await newOrg();
    const stranger = await member(await newOrg(), "owner");
    await newRepo(org, "app");
    const path = registryPathOf(org, "app");
    expect(
      await accessOf(
        await getToken(
          basic("u", stranger.token),
          `repository:${path}:pull,push,delete,*`,
          `repository:${registryPathOf(org, "new")}:push`,
        ),
        stranger.uid,
      ),
    ).toEqual([
      { type: "repository", name: path, actions: [] },
      { type: "repository", name: registryPathOf(org, "new"), actions: [] },
    ]);
  });

  it("expands * into what is held, and adds * only when all of it is", async () => {
    const org = await newOrg();
    await newRepo(org, "app");
    const path = registryPathOf(org, "app");
    const owner = await member(org, "owner");
    const reader = await member(org, "registry.pull");
    expect(await accessOf(await getToken(basic("u", owner.token), `repository:${path}:*`), owner.uid)).toEqual([
      { type: "repository", name: path, actions: ["pull", "push", "delete", "*"] },
    ]);
    expect(await accessOf(await getToken(basic("u", reader.token), `repository:${path}:*`), reader.uid)).toEqual([
      { type: "repository", name: path, actions: ["pull"] },
    ]);
  });

  it("merges repeated scopes and actions, and keeps a resource class", async () => {
    const org = await newOrg();
    const owner = await member(org, "owner");
    const path = registryPathOf(org, "app");
    const res = await getToken(
      basic("u", owner.token),
      `repository:${path}:pull`,
      `repository:${path}:push,pull`,
      `repository(plugin):${path}:pull`,
      `repository:${path}:pull`,
    );
    expect(await accessOf(res, owner.uid)).toEqual([
      { type: "repository", name: path, actions: ["pull", "push"] },
      { type: "repository", class: "plugin", name: path, actions: ["pull"] },
    ]);
  });

  it("gives registry:catalog:* only to holders of repo.list at the root", async () => {
    const org = await newOrg();
    const viewer = await member(org, "owner");
    expect(await accessOf(await getToken(basic("u", viewer.token), "registry:catalog:*"), viewer.uid)).toEqual([
      { type: "registry", name: "catalog", actions: [] },
    ]);
    const adminUid = decodeJwt(server.token).sub!;
    expect(await accessOf(await getToken(basic("admin", server.token), "registry:catalog:*"), adminUid)).toEqual([
      { type: "registry", name: "catalog", actions: ["*"] },
    ]);
  });
});

describe("registry token endpoint: bad input", () => {
  let token: string;
  let path: string;
  beforeAll(async () => {
    const org = await newOrg();
    token = (await member(org, "owner")).token;
    path = registryPathOf(org, "app");
  });

  it("refuses a missing or unknown service with 400", async () => {
    expectError(await get([["scope", `repository:${path}:pull`]], basic("u", token)), 400, "UNSUPPORTED", "service is required");
    const res = await get([["service", "registry.elsewhere.example"]], basic("u", token));
    expectError(res, 400, "UNSUPPORTED", `service "registry.elsewhere.example" is not this registry's (${service()})`);
    // Before the credentials are looked at.
    expectError(await get([["service", "other"]]), 400, "UNSUPPORTED", /is not this registry's/);
    expectError(
      await post({ grant_type: "password", username: "u", password: token, service: "other" }),
      400,
      "UNSUPPORTED",
      /is not this registry's/,
      "invalid_request",
    );
  });

  it.each([
    ["no actions", () => `repository:${path}:`, /names no action/],
    ["an empty action", () => `repository:${path}:pull,,push`, /names no action/],
    ["no name", () => "repository:pull", /is not of the form/],
    ["an unknown action", () => `repository:${path}:pull,fly`, /unknown action "fly"/],
    ["an unknown resource type", () => `image:${path}:pull`, /unknown resource type "image"/],
    ["an upper-case type", () => `Repository:${path}:pull`, /is not of the form/],
    ["a catalog action other than *", () => "registry:catalog:pull", /the one registry scope is registry:catalog:\*/],
    ["another registry resource", () => "registry:config:*", /the one registry scope/],
  ])("refuses a scope with %s with 400", async (_label, scope, message) => {
    expectError(await getToken(basic("u", token), scope()), 400, "UNSUPPORTED", message);
  });

  it.each([
    ["no group component", () => "nginx"],
    ["a group that is no uid", () => "acme/nginx"],
    ["upper case", () => path.toUpperCase()],
    ["a host and port", () => `registry.example:5000/${path}`],
    ["a path over 255 characters", () => `${path}/${"a".repeat(255)}`],
  ])("refuses a repository path with %s with 400 NAME_INVALID", async (_label, name) => {
    expectError(await getToken(basic("u", token), `repository:${name()}:pull`), 400, "NAME_INVALID", /is not a registry path/);
  });

  it("refuses NUL and other control characters in any parameter with 400", async () => {
    for (const bad of [`repository:${path}\u0000:pull`, `repository:${path}:pull\u0001`, `repository:${path}:pull\u007f`]) {
      expectError(await getToken(basic("u", token), bad), 400, "UNSUPPORTED", 'parameter "scope" holds a control character (NUL included)');
    }
    expectError(
      await get([["service", `${service()}\u0000`]], basic("u", token)),
      400,
      "UNSUPPORTED",
      /"service" holds a control character/,
    );
    expectError(
      await get(
        [
          ["service", service()],
          ["account", "a\nb"],
        ],
        basic("u", token),
      ),
      400,
      "UNSUPPORTED",
      /"account" holds a control character/,
    );
    const form = { grant_type: "password", username: "u\u0000", password: token, service: service() };
    expectError(await post(form), 400, "UNSUPPORTED", /"username" holds a control character/, "invalid_request");
    // In Basic credentials, control characters are credentials not accepted.
    expectRefused(await getToken(basic("u\u0000", token)));
  });

  it(`refuses more than ${MAX_SCOPES} scopes, a scope over 512 bytes and a query over 8 KiB`, async () => {
    const scopes = Array.from({ length: MAX_SCOPES }, (_, i) => `repository:${path}${i}:pull`);
    expect((await getToken(basic("u", token), ...scopes)).status).toBe(200);
    expectError(
      await getToken(basic("u", token), ...scopes, `repository:${path}:push`),
      400,
      "UNSUPPORTED",
      `at most ${MAX_SCOPES} scopes may be asked for at once; 17 were`,
    );
    // Space-separated ones count the same.
    const spaced = await post({
      grant_type: "password",
      username: "u",
      password: token,
      service: service(),
      scope: [...scopes, `repository:${path}:push`].join(" "),
    });
    expectError(spaced, 400, "UNSUPPORTED", /at most 16 scopes/, "invalid_scope");
    expectError(
      await getToken(basic("u", token), `repository:${path}/${"a".repeat(512)}:pull`),
      400,
      "UNSUPPORTED",
      "a scope is longer than 512 bytes",
    );
    expectError(
      await get(
        [
          ["service", service()],
          ["account", "a".repeat(9000)],
        ],
        basic("u", token),
      ),
      400,
      "SIZE_INVALID",
      "the query is longer than 8192 bytes",
    );
  });

  it("refuses a form body over 8 KiB, without reading it all", async () => {
    const res = await post({ grant_type: "password", username: "u", password: token, service: service(), client_id: "x".repeat(9000) });
    expectError(res, 400, "SIZE_INVALID", "the form is larger than 8192 bytes", "invalid_request");
    expect(res.headers.get("connection")).toBe("close");
  });

  it("refuses wrong or missing grant types, missing form fields, another content type and repeated parameters", async () => {
    const base = { username: "u", password: token, service: service() };
    expectError(
      await post({ ...base, grant_type: "client_credentials" }),
      400,
      "UNSUPPORTED",
      'grant_type "client_credentials" is not supported: use "password" or "refresh_token"',
      "unsupported_grant_type",
    );
    expectError(
      await post({ ...base, grant_type: "authorization_code" }),
      400,
      "UNSUPPORTED",
      /is not supported/,
      "unsupported_grant_type",
    );
    expectError(await post(base), 400, "UNSUPPORTED", "grant_type is required", "invalid_request");
    expectError(
      await post({ grant_type: "password", username: "u", service: service() }),
      400,
      "UNSUPPORTED",
      'grant_type "password" needs username and password',
      "invalid_request",
    );
    expectError(
      await post({ grant_type: "refresh_token", service: service() }),
      400,
      "UNSUPPORTED",
      'grant_type "refresh_token" needs refresh_token',
      "invalid_request",
    );
    expectError(
      await post(JSON.stringify({ ...base, grant_type: "password" }), "application/json"),
      400,
      "UNSUPPORTED",
      "the body must be application/x-www-form-urlencoded",
      "invalid_request",
    );
    expectError(
      await post(`${new URLSearchParams({ ...base, grant_type: "password" }).toString()}&grant_type=password`),
      400,
      "UNSUPPORTED",
      'parameter "grant_type" is given more than once',
      "invalid_request",
    );
    expectError(
      await get(
        [
          ["service", service()],
          ["service", service()],
        ],
        basic("u", token),
      ),
      400,
      "UNSUPPORTED",
      'parameter "service" is given more than once',
    );
  });

  it("answers other methods 405 (the route takes GET and POST)", async () => {
    expect((await fetch(endpoint.url, { method: "PUT" })).status).toBe(405);
  });
});

describe("registry token endpoint: rate limit", () => {
  it("counts every request by client address before any work, and answers 429 with Retry-After", async () => {
    const url = limited.url;
    expectError(await get([["service", "nope"]], undefined, url), 400, "UNSUPPORTED", /is not this registry's/);
    expectError(await get([], undefined, url), 400, "UNSUPPORTED", "service is required");
    const res = await get([["service", service()]], undefined, url);
    expectError(
      res,
      429,
      "TOOMANYREQUESTS",
      /^Resource exhausted: too many registry token requests from this address: at most 2 per 60 s; retry in \d+ s$/,
    );
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(limitedOutcomes).toEqual(["invalid", "invalid", "limited"]);
  });
});

describe("registry token endpoint: outcomes", () => {
  it("reports each request's outcome once, and the metric counts them", async () => {
    const org = await newOrg();
    const person = await member(org, "registry.pull");
    const before = outcomes.length;
    expect((await getToken(basic("u", person.token))).status).toBe(200);
    expect((await getToken(basic("u", "garbage"))).status).toBe(401);
    expect((await getToken(undefined)).status).toBe(401);
    expect((await get([["service", "nope"]])).status).toBe(400);
    expect(outcomes.slice(before)).toEqual(["issued", "refused", "refused", "invalid"]);
    const metrics = new Metrics();
    for (const outcome of ["issued", "issued", "limited"] as const) metrics.registryToken(outcome);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(/^platform_registry_tokens_total\{outcome="issued"\} 2$/m);
    expect(text).toMatch(/^platform_registry_tokens_total\{outcome="limited"\} 1$/m);
  });
});
