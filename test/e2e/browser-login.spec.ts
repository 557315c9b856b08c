import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { eq } from "drizzle-orm";
import { decodeJwt } from "jose";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schema } from "../../src/db/index.js";
import { ConfigError, loadConfig } from "../../src/server/config.js";
import { cookielessPage, launchChromium } from "../support/chromium.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { startOidcProvider, type TestOidcProvider } from "../support/oidc-provider.js";
import { startTestServer, type TestServer } from "../support/server.js";

// The browser login of issue 5, driven in a real Chromium (test/support/chromium.ts):
// the CLI is a tiny loopback listener here that records what the browser brings back.

const STEP_TIMEOUT_MS = 10_000;

/** The CLI side: records each loopback callback by its `state`. */
interface CliListener {
  /** http://127.0.0.1:<port>/callback */
  callback: string;
  received(state: string): URLSearchParams | undefined;
  count(): number;
  stop(): Promise<void>;
}

async function startCliListener(): Promise<CliListener> {
  const seen = new Map<string, URLSearchParams>();
  let count = 0;
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/callback") {
      count++;
      seen.set(url.searchParams.get("state") ?? "", url.searchParams);
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<p id=done>You may close this window.</p>");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    callback: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    received: (state) => seen.get(state),
    count: () => count,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

let upstream: TestOidcProvider;
let cli: CliListener;
let browser: Browser;
/** Global upstream; the development provider is off. */
let server: TestServer;
/** No upstream: the development provider is on by default. */
let devServer: TestServer;
/** Global upstream and PLATFORM_DEV_LOGIN=true; the upstream's host is a trusted IdP host. */
let bothServer: TestServer;

const upstreamEnv = () => ({
  PLATFORM_OIDC_ISSUER: upstream.issuer,
  PLATFORM_OIDC_CLIENT_ID: "platform",
  PLATFORM_OIDC_CLIENT_SECRET: "platform-secret",
  PLATFORM_ALLOW_INSECURE_ISSUERS: "true",
});

beforeAll(async () => {
  // Native clients: a loopback redirect URI matches on any port, so the servers' ports need not be known yet.
  const redirectUris = ["http://localhost/oauth/callback"];
  upstream = await startOidcProvider([], {
    loginClients: [
      // The global upstream's email comes from userinfo, the organization's from the ID token.
      { clientId: "platform", clientSecret: "platform-secret", redirectUris, userinfo: true },
      { clientId: "org-login", clientSecret: "org-secret", redirectUris },
    ],
  });
  cli = await startCliListener();
  server = await startTestServer(upstreamEnv());
  devServer = await startTestServer();
  bothServer = await startTestServer({ ...upstreamEnv(), PLATFORM_DEV_LOGIN: "true", PLATFORM_TRUSTED_IDP_HOSTS: "127.0.0.1" });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), devServer?.stop(), bothServer?.stop()]);
  await upstream?.stop();
  await cli?.stop();
});

const admin = (target: TestServer) => restClient(target.url, target.token);
const as = (target: TestServer, token: string) => restClient(target.url, token);

async function ok(p: Promise<{ status: number; body: JsonObject }>): Promise<JsonObject> {
  const res = await p;
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const newOrg = async (target: TestServer, name: string) =>
  (await ok(admin(target)("POST", "/iam/v2beta1/groups", { name: `${name}-${randomBytes(3).toString("hex")}` })))["uid"] as string;

const newInvite = async (target: TestServer, org: string, body: JsonObject) =>
  (await ok(admin(target)("POST", `/iam/v2beta1/groupInvites/${org}`, body)))["code"] as string;

/** The `/oauth` URL the CLI opens. */
function loginUrl(target: TestServer, state: string, params: Record<string, string> = {}): string {
  const url = new URL(`${target.app.urls.authUrl}/oauth`);
  url.search = new URLSearchParams({ redirect: cli.callback, state, ...params }).toString();
  return url.href;
}

interface Login {
  page: Page;
  /** The CLI's state of this login. */
  state: string;
  /** Ends it: closes the browser profile the login had to itself, if it had one. */
  end(): Promise<void>;
}

/** Opens the login with no cookies in the browser: in its login page (cookielessPage), or in a profile of its own. */
async function openLogin(target: TestServer, params: Record<string, string> = {}, opts: { ownProfile?: boolean } = {}): Promise<Login> {
  let page: Page;
  let end = async () => {};
  if (opts.ownProfile) {
    const context = await browser.newContext();
    page = await context.newPage();
    end = () => context.close();
  } else {
    page = await cookielessPage(browser);
  }
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS);
  const state = randomBytes(12).toString("base64url");
  await page.goto(loginUrl(target, state, params));
  return { page, state, end };
}

/** Signs in on the upstream's development pages: any password, then consent. */
async function signInUpstream(page: Page, login: string): Promise<void> {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
}

/** What the CLI received once the browser landed on its callback. */
async function cliResult(login: Login): Promise<URLSearchParams> {
  await login.page.waitForURL((u) => u.href.startsWith(cli.callback));
  const got = cli.received(login.state);
  if (!got) throw new Error("the CLI listener saw no callback for this login");
  return got;
}

/** Runs `drive` on a login opened with no cookies in the browser. */
async function withLogin<T>(target: TestServer, params: Record<string, string>, drive: (login: Login) => Promise<T>): Promise<T> {
  const login = await openLogin(target, params);
  try {
    return await drive(login);
  } finally {
    await login.end();
  }
}

/**
 * Through an organization's provider (`org`), the server first shows the page naming the
 * provider's host (the organization is not verified, the host not trusted): continue from it.
 */
async function continueToOrganization(login: Login, params: Record<string, string>): Promise<void> {
  if (params["org"]) await login.page.locator("#continue").click();
}

/** A whole upstream login of `user`; the CLI's callback parameters. */
const upstreamLogin = (target: TestServer, user: string, params: Record<string, string> = {}) =>
  withLogin(target, params, async (login) => {
    await continueToOrganization(login, params);
    await signInUpstream(login.page, user);
    return cliResult(login);
  });

/** A whole development-provider login, the invite typed on the page; the CLI's callback parameters. */
const devLogin = (target: TestServer, username: string, opts: { query?: Record<string, string>; invite?: string } = {}) =>
  withLogin(target, opts.query ?? {}, async (login) => {
    await login.page.locator("#username").fill(username);
    if (opts.invite !== undefined) await login.page.locator("#invite").fill(opts.invite);
    await login.page.locator("#sign-in").click();
    return cliResult(login);
  });

function tokenOf(result: URLSearchParams): string {
  expect(result.get("error"), result.get("error_description") ?? "").toBeNull();
  const token = result.get("token");
  expect(token).toBeTruthy();
  return token!;
}

const subjectOf = (token: string) => decodeJwt(token).sub as string;

async function identityRow(target: TestServer, uid: string) {
  const [row] = await target.app.database.db.select().from(schema.identities).where(eq(schema.identities.uid, uid));
  return row;
}

async function identitiesOf(target: TestServer, issuer: string, subject: string) {
  const t = schema.identities;
  const rows = await target.app.database.db.select().from(t).where(eq(t.claimIssuer, issuer));
  return rows.filter((r) => r.claimSubject === subject);
}

async function bindingsOf(target: TestServer, identityUid: string) {
  const body = await ok(admin(target)("GET", `/iam/v2beta1/roleBindings?identity=${identityUid}`));
  return (body["roleBindings"] as JsonObject[]).map((b) => ({
    group: (b["group"] as JsonObject)["uid"],
    role: (b["role"] as JsonObject)["uid"],
  }));
}

/** The role bindings `actor` is recorded as having made in `org` (the audit log). */
async function bindingEventsBy(target: TestServer, org: string, actor: string) {
  const query = `uidp.in_root=${org}&type=platform.iam.role_binding.created.v1&actor=${actor}`;
  return (await ok(admin(target)("GET", `/events/v2beta1/events?${query}`)))["events"] as JsonObject[];
}

function expectError(result: URLSearchParams, state: string, code: string): void {
  expect(result.get("state")).toBe(state);
  expect(result.get("error"), result.get("error_description") ?? "").toBe(code);
  expect(result.get("error_description")).toBeTruthy();
  expect(result.get("token")).toBeNull();
}

/** An upstream login of `user` that ends at the CLI with error `code`, leaving no identity behind. */
async function expectUpstreamRefusal(user: string, params: Record<string, string>, code: string): Promise<void> {
  await withLogin(server, params, async (login) => {
    await continueToOrganization(login, params);
    await signInUpstream(login.page, user);
    expectError(await cliResult(login), login.state, code);
  });
  expect(await identitiesOf(server, upstream.issuer, user)).toEqual([]);
}

describe("browser login through an upstream OIDC provider", () => {
  it("hands the CLI a working API token and creates the person's root-level identity once", async () => {
    const first = await upstreamLogin(server, "ada");
    const token = tokenOf(first);
    expect(Date.parse(first.get("expiry")!) - server.clock.now().getTime()).toBeGreaterThan(59 * 60 * 1000);
    const claims = decodeJwt(token);
    expect(claims.iss).toBe(server.app.urls.authUrl);
    expect(claims.aud).toBe(server.app.urls.baseUrl);
    expect((await as(server, token)("GET", "/iam/v2beta1/groups")).status).toBe(200);

    const identity = await identityRow(server, subjectOf(token));
    expect(identity).toMatchObject({ parentUid: null, claimIssuer: upstream.issuer, claimSubject: "ada", name: "ada@example.com" });

    const second = tokenOf(await upstreamLogin(server, "ada"));
    expect(second).not.toBe(token);
    expect(subjectOf(second)).toBe(identity!.uid);
    expect(await identitiesOf(server, upstream.issuer, "ada")).toHaveLength(1);
  });

  it("a new person holds no role: they may create an organization and then own it", async () => {
    const token = tokenOf(await upstreamLogin(server, "nora"));
    expect(await bindingsOf(server, subjectOf(token))).toEqual([]);
    const org = await ok(as(server, token)("POST", "/iam/v2beta1/groups", { name: "nora-org" }));
    expect((await as(server, token)("GET", `/iam/v2beta1/groups/${org["uid"] as string}`)).status).toBe(200);
  });

  it("signs in through an organization's identity provider and binds its default role there at first login", async () => {
    const org = await newOrg(server, "idp-org");
    await ok(
      admin(server)("POST", `/iam/v2beta1/identityProviders/${org}`, {
        name: "corporate sso",
        defaultRole: "viewer",
        oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "org-secret", additionalScopes: ["email"] },
      }),
    );
    const token = tokenOf(await upstreamLogin(server, "olivia", { org }));
    const uid = subjectOf(token);
    expect(await identityRow(server, uid)).toMatchObject({ parentUid: null, claimSubject: "olivia", name: "olivia@example.com" });
    expect(await bindingsOf(server, uid)).toEqual([{ group: org, role: "viewer" }]);
    expect((await as(server, token)("GET", `/iam/v2beta1/groups/${org}`)).status).toBe(200);
    expect((await as(server, token)("POST", `/registry/v2beta1/repos/${org}`, { name: "olivia/app" })).status).toBe(403);
    // The binding is in the audit log, made by the person's sign-in.
    const recorded = await bindingEventsBy(server, org, uid);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ group: org, data: { after: { identity: { uid }, group: { uid: org }, role: { uid: "viewer" } } } });

    // Again: the same identity, and no second binding (nor event).
    expect(subjectOf(tokenOf(await upstreamLogin(server, "olivia", { org })))).toBe(uid);
    expect(await bindingsOf(server, uid)).toHaveLength(1);
    expect(await bindingEventsBy(server, org, uid)).toHaveLength(1);
  });

  it("an organization without an identity provider is a typed error at the CLI", async () => {
    const org = await newOrg(server, "no-idp");
    const res = await fetch(loginUrl(server, "s-no-idp", { org }), { redirect: "manual" });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location")!);
    expect(location.origin + location.pathname).toBe(cli.callback);
    expectError(location.searchParams, "s-no-idp", "no_identity_provider");
  });

  it("an identity provider the server may not or cannot contact is upstream_error at the CLI, before any sign-in", async () => {
    const refusal = async (target: TestServer, issuer: string, state: string) => {
      const org = await newOrg(target, "unusable-idp");
      await ok(admin(target)("POST", `/iam/v2beta1/identityProviders/${org}`, { name: "sso", oidc: { issuer, clientId: "org-login" } }));
      const res = await fetch(loginUrl(target, state, { org }), { redirect: "manual" });
      expect(res.status).toBe(302);
      expect(res.headers.get("set-cookie")).toBeNull();
      const result = new URL(res.headers.get("location")!).searchParams;
      expectError(result, state, "upstream_error");
      return result.get("error_description")!;
    };
    // devServer does not allow http issuers; server does, but nothing listens on port 9.
    expect(await refusal(devServer, upstream.issuer, "s-insecure")).toContain("https is required");
    expect(await refusal(server, "http://127.0.0.1:9", "s-unreachable")).toContain("could not be reached");
  });

  it("an identity provider whose client secret is wrong ends in upstream_error, no token", async () => {
    const org = await newOrg(server, "bad-secret");
    await ok(
      admin(server)("POST", `/iam/v2beta1/identityProviders/${org}`, {
        name: "broken",
        oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "not-the-secret" },
      }),
    );
    await expectUpstreamRefusal("bert", { org }, "upstream_error");
  });

  it("denied consent at the upstream: the CLI gets error=access_denied and no token", async () => {
    await withLogin(server, {}, async (login) => {
      await login.page.locator('input[name="login"]').fill("dan");
      await login.page.locator('input[name="password"]').fill("any password");
      await login.page.getByRole("button", { name: "Sign-in" }).click();
      await login.page.getByRole("button", { name: "Continue" }).waitFor();
      await login.page.getByRole("link", { name: "[ Cancel ]" }).click();
      expectError(await cliResult(login), login.state, "access_denied");
    });
    expect(await identitiesOf(server, upstream.issuer, "dan")).toEqual([]);
  });

  it("refuses an answer whose state is forged or that comes to another browser: a 400 page, nothing sent to the CLI", async () => {
    const login = await openLogin(server, {}, { ownProfile: true });
    const other = await browser.newContext();
    try {
      const upstreamPage = login.page.url();
      expect(new URL(upstreamPage).origin).toBe(upstream.issuer);
      const before = cli.count();

      // While the login is pending, an answer with a state this browser never started.
      const forged = `${server.app.urls.authUrl}/oauth/callback?code=forged&state=${randomBytes(32).toString("base64url")}`;
      expect((await login.page.goto(forged))?.status()).toBe(400);
      expect(await login.page.locator("#error").textContent()).toContain("state does not match");
      const tampered = await login.page.goto(`${server.app.urls.authUrl}/oauth/callback?code=forged&state=not-a-state`);
      expect(tampered?.status()).toBe(400);

      // The pending login is intact: back at the upstream, it finishes.
      let answer = "";
      login.page.on("request", (req) => {
        if (new URL(req.url()).pathname === "/oauth/callback") answer = req.url();
      });
      await login.page.goto(upstreamPage);
      await signInUpstream(login.page, "mallory");
      tokenOf(await cliResult(login));
      expect(cli.count()).toBe(before + 1);

      // The upstream's real answer, replayed in another browser or again in this one (the login is over).
      expect(new URL(answer).searchParams.get("code")).toBeTruthy();
      const elsewhere = await other.newPage();
      expect((await elsewhere.goto(answer))?.status()).toBe(400);
      expect(elsewhere.url()).toBe(answer);
      expect((await login.page.goto(answer))?.status()).toBe(400);
      expect(cli.count()).toBe(before + 1);
    } finally {
      await other.close();
      await login.end();
    }
  });

  it("refuses a redirect that is not the CLI's loopback callback: 400, never redirected", async () => {
    const refused = [
      "http://evil.example/callback",
      "https://127.0.0.1:4000/callback",
      "http://127.0.0.1.evil.example:4000/callback",
      "http://127.0.0.1:4000/other",
      "http://127.0.0.1/callback",
      "http://user@127.0.0.1:4000/callback",
      "http://127.0.0.1:4000/callback?next=http://evil.example",
      "javascript:alert(1)",
      "",
    ];
    for (const redirect of refused) {
      const res = await fetch(`${server.app.urls.authUrl}/oauth?${new URLSearchParams({ redirect, state: "s" })}`, { redirect: "manual" });
      expect(res.status, redirect).toBe(400);
      expect(res.headers.get("location"), redirect).toBeNull();
      expect(res.headers.get("set-cookie"), redirect).toBeNull();
      expect(res.headers.get("content-type")).toContain("text/html");
    }
    for (const redirect of ["http://localhost:4000/callback", "http://[::1]:4000/callback"]) {
      const res = await fetch(`${server.app.urls.authUrl}/oauth?${new URLSearchParams({ redirect, state: "s" })}`, { redirect: "manual" });
      expect(res.status, redirect).toBe(302);
      expect(new URL(res.headers.get("location")!).origin).toBe(upstream.issuer);
    }
    const page = await browser.newPage();
    try {
      const url = `${server.app.urls.authUrl}/oauth?${new URLSearchParams({ redirect: "http://evil.example/callback", state: "s" })}`;
      const res = await page.goto(url, { timeout: STEP_TIMEOUT_MS });
      expect(res?.status()).toBe(400);
      expect(page.url()).toBe(url);
      expect(await page.locator("#error").textContent()).toContain("http://127.0.0.1:<port>/callback");
    } finally {
      await page.close();
    }
  });

  it("a login link without a state is refused with a 400 page", async () => {
    const res = await fetch(`${server.app.urls.authUrl}/oauth?${new URLSearchParams({ redirect: cli.callback })}`, { redirect: "manual" });
    expect(res.status).toBe(400);
    expect(res.headers.get("location")).toBeNull();
  });

  it("the development provider is off (404) when an upstream is configured", async () => {
    expect((await fetch(`${server.app.urls.authUrl}/oauth/dev?login=x`)).status).toBe(404);
    expect((await fetch(`${server.app.urls.authUrl}/oauth/dev`, { method: "POST", body: "username=x" })).status).toBe(404);
  });
});

describe("signing in at an organization's identity provider", () => {
  /** An organization (or `group` of one) with a provider named `name` at the test upstream. */
  async function orgWithIdp(target: TestServer, name: string): Promise<string> {
    const org = await newOrg(target, "leaving");
    await ok(
      admin(target)("POST", `/iam/v2beta1/identityProviders/${org}`, {
        name,
        oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "org-secret" },
      }),
    );
    return org;
  }

  const start = (target: TestServer, state: string, org: string) => fetch(loginUrl(target, state, { org }), { redirect: "manual" });

  it("an unverified organization's provider is shown first, by host, with Continue and Cancel, and never redirected to", async () => {
    const name = `<script>alert("x")</script> & 'sso'`;
    const org = await orgWithIdp(server, name);
    const res = await start(server, "s-leaving", org);
    expect(res.status).toBe(200);
    expect(res.headers.get("location")).toBeNull();
    expect(res.headers.get("content-type")).toContain("text/html");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("cache-control")).toBe("no-store");
    // The pending login starts here, so that Continue finds it.
    expect(res.headers.get("set-cookie")).toMatch(/^platform_login_[A-Za-z0-9_-]{43}=/);
    const html = await res.text();
    const host = new URL(upstream.issuer).host;
    expect(html).toContain(`<strong id="host">${host}</strong>`);
    // No way to leave by itself: no script, no refresh.
    expect(html).not.toMatch(/<script|http-equiv|<meta[^>]+refresh/i);
    expect(html).toContain("&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62; &#38; &#39;sso&#39;");
    const group = await ok(admin(server)("GET", `/iam/v2beta1/groups/${org}`));
    expect(html).toContain(`<strong id="group">${group["name"] as string}</strong> (<code>${org}</code>)`);

    // The links' targets, unescaped (the page writes & as &#38;).
    const href = (id: string) => new URL(new RegExp(`id="${id}" href="([^"]*)"`).exec(html)![1]!.replaceAll("&#38;", "&"));
    const next = href("continue");
    expect(next.origin).toBe(upstream.issuer);
    expect(next.searchParams.get("client_id")).toBe("org-login");
    const cancel = href("cancel");
    expect(cancel.origin + cancel.pathname).toBe(cli.callback);
    expect(cancel.searchParams.get("state")).toBe("s-leaving");
    expect(cancel.searchParams.get("error")).toBe("access_denied");
    expect(cancel.searchParams.get("token")).toBeNull();
  });

  it("goes straight to the provider of an organization marked verified", async () => {
    const org = await orgWithIdp(server, "sso");
    await server.app.database.db.update(schema.groups).set({ verified: true }).where(eq(schema.groups.uid, org));
    const res = await start(server, "s-verified", org);
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get("location")!).origin).toBe(upstream.issuer);
  });

  it("a subgroup's provider in a verified organization is still shown first: the verification is the root group's providers'", async () => {
    const org = await newOrg(server, "verified-parent");
    await server.app.database.db.update(schema.groups).set({ verified: true }).where(eq(schema.groups.uid, org));
    // A delegated owner of a team points the team's provider at a host of their choosing.
    const team = (await ok(admin(server)("POST", `/iam/v2beta1/groups/${org}`, { name: "delegated-team" })))["uid"] as string;
    await ok(
      admin(server)("POST", `/iam/v2beta1/identityProviders/${team}`, {
        name: "look-alike",
        oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "org-secret" },
      }),
    );
    const res = await start(server, "s-verified-team", team);
    expect(res.status).toBe(200);
    expect(res.headers.get("location")).toBeNull();
    expect(await res.text()).toContain(`<strong id="host">${new URL(upstream.issuer).host}</strong>`);
  });

  it("goes straight to a provider at a host of PLATFORM_TRUSTED_IDP_HOSTS", async () => {
    const org = await orgWithIdp(bothServer, "sso");
    const res = await start(bothServer, "s-trusted", org);
    expect(res.status).toBe(302);
    expect(new URL(res.headers.get("location")!).origin).toBe(upstream.issuer);
  });

  it("in a browser, Cancel ends the login at the CLI with access_denied and nothing signed in", async () => {
    const org = await orgWithIdp(server, "sso");
    await withLogin(server, { org }, async (login) => {
      expect(await login.page.locator("#host").textContent()).toBe(new URL(upstream.issuer).host);
      await login.page.locator("#cancel").click();
      expectError(await cliResult(login), login.state, "access_denied");
    });
  });
});

describe("group invites redeemed at login", () => {
  it("an invite for editor at an organization binds it: the person can then create a repo there", async () => {
    const org = await newOrg(server, "invite-org");
    const code = await newInvite(server, org, { roleUid: "editor", email: "Erin@Example.com", ttl: "3600s" });
    const token = tokenOf(await upstreamLogin(server, "erin", { invite: code }));
    expect(await bindingsOf(server, subjectOf(token))).toEqual([{ group: org, role: "editor" }]);
    const [recorded, ...more] = await bindingEventsBy(server, org, subjectOf(token));
    expect(more).toEqual([]);
    expect(recorded).toMatchObject({ group: org, data: { after: { identity: { uid: subjectOf(token) }, role: { uid: "editor" } } } });
    expect((await as(server, token)("POST", `/registry/v2beta1/repos/${org}`, { name: "erin/app" })).status).toBe(200);
    const invites = await ok(admin(server)("GET", `/iam/v2beta1/groupInvites?uidp.children_of=${org}`));
    expect((invites["groupInvites"] as JsonObject[])[0]?.["redeemTime"]).toBeTruthy();
  });

  it("an invite for another email is refused (invite_email_mismatch) and the login changes nothing", async () => {
    const org = await newOrg(server, "invite-email");
    const code = await newInvite(server, org, { roleUid: "editor", email: "someone.else@example.com", ttl: "3600s" });
    await expectUpstreamRefusal("frank", { invite: code }, "invite_email_mismatch");
  });

  it("an organization's identity provider vouches for emails of its own organization's invites only", async () => {
    const orgIdp = async (name: string) => {
      const org = await newOrg(server, name);
      await ok(
        admin(server)("POST", `/iam/v2beta1/identityProviders/${org}`, {
          name: "sso",
          oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "org-secret", additionalScopes: ["email"] },
        }),
      );
      return org;
    };
    const [home, elsewhere] = [await orgIdp("email-home"), await newOrg(server, "email-elsewhere")];
    // Another organization's provider may claim any verified email: it does not satisfy this invite.
    const foreign = await newInvite(server, elsewhere, { roleUid: "editor", email: "victor@example.com", ttl: "3600s" });
    await expectUpstreamRefusal("victor", { org: home, invite: foreign }, "invite_email_mismatch");

    // The same provider does satisfy an invite anywhere in its own organization.
    const team = (await ok(admin(server)("POST", `/iam/v2beta1/groups/${home}`, { name: "team" })))["uid"] as string;
    const own = await newInvite(server, team, { roleUid: "editor", email: "victor@example.com", ttl: "3600s" });
    const token = tokenOf(await upstreamLogin(server, "victor", { org: home, invite: own }));
    expect(await bindingsOf(server, subjectOf(token))).toEqual([{ group: team, role: "editor" }]);
  });

  it("a subgroup's identity provider does not satisfy an invite at its organization; the organization's own does", async () => {
    // Alice (here the admin) invites the CEO as owner of the organization; Bob, owner of a team only,
    // configures a provider in his team that vouches for the CEO's address and redeems the code through it.
    const org = await newOrg(server, "invite-above");
    const team = (await ok(admin(server)("POST", `/iam/v2beta1/groups/${org}`, { name: "bobs-team" })))["uid"] as string;
    const idpAt = (group: string) =>
      ok(
        admin(server)("POST", `/iam/v2beta1/identityProviders/${group}`, {
          name: "sso",
          oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "org-secret", additionalScopes: ["email"] },
        }),
      );
    await idpAt(team);
    const code = await newInvite(server, org, { roleUid: "owner", email: "ceo@corp.example", ttl: "3600s", singleUse: true });
    await expectUpstreamRefusal("ceo@corp.example", { org: team, invite: code }, "invite_email_mismatch");
    const invites = await ok(admin(server)("GET", `/iam/v2beta1/groupInvites?uidp.children_of=${org}`));
    expect((invites["groupInvites"] as JsonObject[])[0]?.["redeemTime"] ?? null).toBeNull();

    // Through a provider of the organization itself, the same person redeems it.
    await idpAt(org);
    const token = tokenOf(await upstreamLogin(server, "ceo@corp.example", { org, invite: code }));
    expect(await bindingsOf(server, subjectOf(token))).toEqual([{ group: org, role: "owner" }]);
  });

  it("the development provider never satisfies an email-restricted invite", async () => {
    const org = await newOrg(devServer, "dev-email");
    const code = await newInvite(devServer, org, { roleUid: "viewer", email: "walt@example.com", ttl: "3600s" });
    const result = await devLogin(devServer, "walt", { invite: code });
    expect(result.get("error"), result.get("error_description") ?? "").toBe("invite_email_mismatch");
    expect(await identitiesOf(devServer, `${devServer.app.urls.authUrl}/dev`, "walt")).toEqual([]);
  });

  it("a malformed invite code is refused before anyone signs in", async () => {
    const res = await fetch(loginUrl(server, "s-bad-invite", { invite: "not a code!" }), { redirect: "manual" });
    expectError(new URL(res.headers.get("location")!).searchParams, "s-bad-invite", "invalid_invite");
  });

  it("a single-use invite entered on the login page works once; the second login gets invite_used", async () => {
    const org = await newOrg(devServer, "single-use");
    const code = await newInvite(devServer, org, { roleUid: "editor", ttl: "3600s", singleUse: true });
    const token = tokenOf(await devLogin(devServer, "sam", { invite: code }));
    expect(await bindingsOf(devServer, subjectOf(token))).toEqual([{ group: org, role: "editor" }]);

    const again = await devLogin(devServer, "tess", { invite: code });
    expect(again.get("error"), again.get("error_description") ?? "").toBe("invite_used");
    expect(again.get("token")).toBeNull();
    expect(await identitiesOf(devServer, `${devServer.app.urls.authUrl}/dev`, "tess")).toEqual([]);
  });

  it("an expired invite is refused with invite_expired; an unknown one with invalid_invite", async () => {
    const org = await newOrg(devServer, "expiring");
    const code = await newInvite(devServer, org, { roleUid: "viewer", ttl: "60s" });
    devServer.clock.advance(2 * 60 * 1000);
    const expired = await devLogin(devServer, "uma", { query: { invite: code } });
    expect(expired.get("error"), expired.get("error_description") ?? "").toBe("invite_expired");
    expect(expired.get("token")).toBeNull();

    const unknown = await devLogin(devServer, "uma", { query: { invite: randomBytes(32).toString("base64url") } });
    expect(unknown.get("error")).toBe("invalid_invite");
  });
});

describe("the development provider", () => {
  it("signs a person in from its page in chromium, with no upstream configured", async () => {
    const identity = await withLogin(devServer, {}, async (login) => {
      expect(new URL(login.page.url()).pathname).toBe("/oauth/dev");
      expect(await login.page.locator("#upstream").count()).toBe(0);
      await login.page.locator("#username").fill("Not Valid!");
      await login.page.locator("#username").evaluate((input) => input.removeAttribute("pattern"));
      await login.page.locator("#sign-in").click();
      expect(await login.page.locator("#error").textContent()).toContain("username");
      await login.page.locator("#username").fill("dev.user");
      await login.page.locator("#sign-in").click();
      const token = tokenOf(await cliResult(login));
      expect((await as(devServer, token)("GET", "/iam/v2beta1/groups")).status).toBe(200);
      const identity = await identityRow(devServer, subjectOf(token));
      expect(identity).toMatchObject({
        parentUid: null,
        claimIssuer: `${devServer.app.urls.authUrl}/dev`,
        claimSubject: "dev.user",
        name: "dev.user",
      });
      return identity;
    });
    // Signing in again finds the same identity.
    expect(subjectOf(tokenOf(await devLogin(devServer, "dev.user")))).toBe(identity!.uid);
  });

  it("prefills the invite code from the login link", async () => {
    await withLogin(devServer, { invite: "A".repeat(43) }, async (login) => {
      expect(await login.page.locator("#invite").inputValue()).toBe("A".repeat(43));
    });
  });

  it("refuses a form without its login's CSRF token, and one from another browser", async () => {
    const start = await fetch(loginUrl(devServer, "s-csrf"), { redirect: "manual" });
    const cookie = start.headers.get("set-cookie")!.split(";")[0]!;
    const loginState = new URL(start.headers.get("location")!, devServer.app.urls.authUrl).searchParams.get("login")!;
    const page = await fetch(`${devServer.app.urls.authUrl}/oauth/dev?login=${loginState}`, { headers: { cookie } });
    const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const post = (form: Record<string, string>, headers: Record<string, string>) =>
      fetch(`${devServer.app.urls.authUrl}/oauth/dev`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
        body: new URLSearchParams(form),
      });
    const form = { login: loginState, csrf, username: "carol" };
    expect((await post({ ...form, csrf: "x".repeat(43) }, { cookie })).status).toBe(400);
    expect((await post(form, {})).status).toBe(400);
    const done = await post(form, { cookie });
    expect(done.status).toBe(303);
    expect(new URL(done.headers.get("location")!).searchParams.get("token")).toBeTruthy();
    expect(done.headers.get("set-cookie")).toContain("Max-Age=0");
  });

  it("on by default, it serves only requests straight from this machine: not through a proxy, not for a public host", async () => {
    /** GET or POST `/oauth/dev` of `target` with these headers (Host included: fetch may not set it). */
    const devRequest = (target: TestServer, method: "GET" | "POST", query: string, headers: Record<string, string>) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const url = new URL(`${target.app.urls.authUrl}/oauth/dev${query}`);
        const req = http.request(url, { method, headers, agent: false }, (res) => {
          let body = "";
          res.on("data", (c: Buffer) => (body += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode!, body }));
        });
        req.on("error", reject);
        req.end(method === "POST" ? "login=x&csrf=y&username=mallory" : undefined);
      });
    const pendingOn = async (target: TestServer, state: string) => {
      const start = await fetch(loginUrl(target, state), { redirect: "manual" });
      const cookie = start.headers.get("set-cookie")!.split(";")[0]!;
      return { cookie, query: new URL(start.headers.get("location")!, target.app.urls.authUrl).search };
    };
    const own = new URL(devServer.app.urls.authUrl).host;
    const { cookie, query } = await pendingOn(devServer, "s-proxied");
    // Straight from this machine: the page.
    const direct = await devRequest(devServer, "GET", query, { cookie, host: own });
    expect(direct.status).toBe(200);
    expect(direct.body).toContain('id="username"');
    const refusals: Record<string, string>[] = [
      { host: "platform.example.com" },
      { host: "127.0.0.1.nip.io" },
      { host: own, "x-forwarded-for": "203.0.113.7" },
      { host: own, "x-forwarded-host": "platform.example.com" },
      { host: own, forwarded: "for=203.0.113.7" },
      { host: own, "x-real-ip": "203.0.113.7" },
    ];
    for (const headers of refusals) {
      for (const method of ["GET", "POST"] as const) {
        const res = await devRequest(devServer, method, query, { cookie, "content-type": "application/x-www-form-urlencoded", ...headers });
        expect(res.status, `${method} ${JSON.stringify(headers)}`).toBe(403);
        expect(res.body).toContain("PLATFORM_DEV_LOGIN=true");
        expect(res.body).not.toContain('id="username"');
      }
    }
    // Set explicitly (PLATFORM_DEV_LOGIN=true), the operator chose it: a proxy may carry it.
    const both = await pendingOn(bothServer, "s-proxied-explicit");
    const proxied = await devRequest(bothServer, "GET", both.query, {
      cookie: both.cookie,
      host: "platform.example.com",
      "x-forwarded-for": "203.0.113.7",
    });
    expect(proxied.status).toBe(200);
    expect(proxied.body).toContain('id="username"');
  });

  it("a login older than 10 minutes ends with login_expired", async () => {
    await withLogin(devServer, {}, async (login) => {
      await login.page.locator("#username").fill("slow");
      devServer.clock.advance(11 * 60 * 1000);
      await login.page.locator("#sign-in").click();
      expectError(await cliResult(login), login.state, "login_expired");
    });
  });

  it("with PLATFORM_DEV_LOGIN=true and an upstream, the page offers both and the upstream signs in", async () => {
    const token = await withLogin(bothServer, {}, async (login) => {
      expect(new URL(login.page.url()).pathname).toBe("/oauth/dev");
      await login.page.locator("#upstream").click();
      await signInUpstream(login.page, "both");
      return tokenOf(await cliResult(login));
    });
    expect((await identityRow(bothServer, subjectOf(token)))?.claimIssuer).toBe(upstream.issuer);
  });
});

describe("login configuration", () => {
  const base = { PLATFORM_DATA_DIR: "/tmp/unused" };
  it("turns the development provider on only without an upstream, unless PLATFORM_DEV_LOGIN says otherwise", () => {
    expect(loadConfig(base).devLogin).toBe(true);
    expect(loadConfig({ ...base, PLATFORM_DEV_LOGIN: "false" }).devLogin).toBe(false);
    const withUpstream = { ...base, PLATFORM_OIDC_ISSUER: "https://login.example.com", PLATFORM_OIDC_CLIENT_ID: "platform" };
    expect(loadConfig(withUpstream).devLogin).toBe(false);
    expect(loadConfig({ ...withUpstream, PLATFORM_DEV_LOGIN: "true" }).devLogin).toBe(true);
    expect(loadConfig(withUpstream).oidc).toEqual({
      issuer: "https://login.example.com",
      clientId: "platform",
      clientSecret: "",
      scopes: ["openid", "email", "profile"],
    });
    expect(loadConfig({ ...withUpstream, PLATFORM_OIDC_SCOPES: "email groups" }).oidc?.scopes).toEqual(["openid", "email", "groups"]);
  });

  it("refuses an http upstream (unless insecure issuers are allowed) and an issuer without a client id", () => {
    expect(() => loadConfig({ PLATFORM_OIDC_ISSUER: "http://login.example.com", PLATFORM_OIDC_CLIENT_ID: "c" })).toThrow(ConfigError);
    expect(
      loadConfig({ PLATFORM_OIDC_ISSUER: "http://127.0.0.1:9", PLATFORM_OIDC_CLIENT_ID: "c", PLATFORM_ALLOW_INSECURE_ISSUERS: "true" }).oidc
        ?.issuer,
    ).toBe("http://127.0.0.1:9");
    expect(() => loadConfig({ PLATFORM_OIDC_ISSUER: "https://login.example.com" })).toThrow(/PLATFORM_OIDC_CLIENT_ID/);
    expect(() => loadConfig({ PLATFORM_OIDC_CLIENT_ID: "c" })).toThrow(/PLATFORM_OIDC_ISSUER/);
  });
});
