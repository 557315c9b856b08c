import { randomBytes } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt } from "jose";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { cookielessPage, launchChromium } from "../support/chromium.js";
import { runCliInProcess as runCli } from "../support/cli-in-process.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { startOidcProvider, type TestOidcProvider } from "../support/oidc-provider.js";
import { ok, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

// PLATFORM_ADMINS (docs/iam.md, "Platform administrators (root role bindings)"): people of the
// upstream provider named by issuer|subject or by a verified e-mail become
// `owner` at the root when they sign in with a browser, and can then do what
// needs the root, such as importing advisories. Driven in a real Chromium
// through the upstream's own login pages.

const STEP_TIMEOUT_MS = 10_000;
const ROOT = "/iam/v2beta1/rootRoleBindings";

let upstream: TestOidcProvider;
let browser: Browser;
/** Global upstream with PLATFORM_ADMINS. */
let server: TestServer;
/** The same, with the development provider on too. */
let devServer: TestServer;
let cli: { callback: string; seen: Map<string, URLSearchParams>; stop(): Promise<void> };

const adminsEnv = () => ({
  PLATFORM_OIDC_ISSUER: upstream.issuer,
  PLATFORM_OIDC_CLIENT_ID: "platform",
  PLATFORM_OIDC_CLIENT_SECRET: "platform-secret",
  PLATFORM_ALLOW_INSECURE_ISSUERS: "true",
  // The organizations' providers are on this machine: no page before them (browser-login.spec tests it).
  PLATFORM_TRUSTED_IDP_HOSTS: "127.0.0.1",
  // alice by subject; grace and olga by their (verified) e-mail, in another case than the upstream's.
  PLATFORM_ADMINS: ` ${upstream.issuer}|alice , email:Grace@Example.com,email:olga@example.com`,
});

beforeAll(async () => {
  upstream = await startOidcProvider([], {
    loginClients: [
      { clientId: "platform", clientSecret: "platform-secret", redirectUris: ["http://localhost/oauth/callback"], userinfo: true },
      { clientId: "org-login", clientSecret: "org-secret", redirectUris: ["http://localhost/oauth/callback"] },
    ],
  });
  const seen = new Map<string, URLSearchParams>();
  const listener = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (url.pathname === "/callback") seen.set(url.searchParams.get("state") ?? "", url.searchParams);
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<p>done</p>");
  });
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", () => resolve()));
  cli = {
    callback: `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`,
    seen,
    stop: () => new Promise<void>((resolve) => (listener.closeAllConnections(), listener.close(() => resolve()))),
  };
  server = await startTestServer(adminsEnv());
  devServer = await startTestServer({ ...adminsEnv(), PLATFORM_DEV_LOGIN: "true" });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([server?.stop(), devServer?.stop()]);
  await upstream?.stop();
  await cli?.stop();
});

/** A whole browser login at `target`; `signIn` drives the pages. Returns the API token the CLI got. */
async function login(target: TestServer, signIn: (page: Page) => Promise<void>, params: Record<string, string> = {}): Promise<string> {
  // No cookies: a login as in a new browser profile.
  const page = await cookielessPage(browser);
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.setDefaultNavigationTimeout(STEP_TIMEOUT_MS);
  const state = randomBytes(12).toString("base64url");
  const url = new URL(`${target.app.urls.authUrl}/oauth`);
  url.search = new URLSearchParams({ redirect: cli.callback, state, ...params }).toString();
  await page.goto(url.href);
  await signIn(page);
  await page.waitForURL((u) => u.href.startsWith(cli.callback));
  const got = cli.seen.get(state);
  expect(got?.get("error"), got?.get("error_description") ?? "").toBeNull();
  return got!.get("token")!;
}

/** The upstream's development login pages: any password, then consent. */
const upstreamAs = (user: string) => async (page: Page) => {
  await page.locator('input[name="login"]').fill(user);
  await page.locator('input[name="password"]').fill("any password");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
};

const admin = (target: TestServer) => restClient(target.url, target.token);

async function rootRolesOf(target: TestServer, identityUid: string): Promise<string[]> {
  const body = await ok(admin(target)("GET", `${ROOT}?identity=${identityUid}`));
  return (body["rootRoleBindings"] as JsonObject[]).map((b) => (b["role"] as JsonObject)["uid"] as string);
}

const importAdvisory = (target: TestServer, token: string) =>
  restClient(target.url, token)("POST", "/vulnerabilities/v2beta1/advisories:import", {
    documents: [
      {
        id: `GHSA-${randomBytes(2).toString("hex")}-${randomBytes(2).toString("hex")}-${randomBytes(2).toString("hex")}`,
        modified: "2024-05-01T00:00:00Z",
        aliases: ["CVE-2024-0001"],
      },
    ],
  });

/** The root bindings of `identityUid` in the audit log (global events: the admin sees them). */
async function rootBindingEventsFor(target: TestServer, identityUid: string): Promise<JsonObject[]> {
  const body = await ok(admin(target)("GET", "/events/v2beta1/events?type=platform.iam.root_role_binding.created.v1"));
  const boundIdentity = (e: JsonObject) => (((e["data"] as JsonObject)["after"] as JsonObject)["identity"] as JsonObject)["uid"];
  return (body["events"] as JsonObject[]).filter((e) => boundIdentity(e) === identityUid);
}

describe("PLATFORM_ADMINS", () => {
  it("a person named by issuer|subject becomes owner at the root at sign-in, once, and can import advisories", async () => {
    const token = await login(server, upstreamAs("alice"));
    const uid = decodeJwt(token).sub!;
    expect(await rootRolesOf(server, uid)).toEqual(["owner"]);
    const imported = await ok(importAdvisory(server, token));
    expect((imported["results"] as JsonObject[])[0]?.["outcome"]).toBe("OUTCOME_CREATED");

    // And with platformctl, as that person: the OSV files of a feed, imported at the root.
    const dir = await mkdtemp(join(tmpdir(), "platform-admins-"));
    try {
      const file = join(dir, "feed.json");
      const id = `GHSA-${randomBytes(2).toString("hex")}-cli0-0001`;
      await writeFile(file, JSON.stringify([{ id, modified: "2024-05-01T00:00:00Z", aliases: [] }]));
      const run = await runCli(["--api", server.url, "advisories", "import", file], { PLATFORM_TOKEN: token, PLATFORM_CONFIG_DIR: dir });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain("imported 1 of 1");
      expect((await restClient(server.url, token)("GET", `/vulnerabilities/v2beta1/advisories/${id}`)).status).toBe(200);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }

    // The binding is in the audit log, made by the server's configuration (no actor).
    const recorded = await rootBindingEventsFor(server, uid);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).toMatchObject({ actor: "", group: "", data: { after: { identity: { uid }, role: { uid: "owner" } } } });
    expect(recorded[0]!["data"]).toEqual({ after: await ok(admin(server)("GET", `${ROOT}/${recorded[0]!["subject"] as string}`)) });

    // Signing in again changes nothing (the binding is made only when missing).
    const again = await login(server, upstreamAs("alice"));
    expect(decodeJwt(again).sub).toBe(uid);
    expect(await rootRolesOf(server, uid)).toEqual(["owner"]);
    expect(await rootBindingEventsFor(server, uid)).toHaveLength(1);
  });

  it("a person named by a verified e-mail becomes owner at the root; a deleted binding comes back at the next sign-in", async () => {
    const token = await login(server, upstreamAs("grace"));
    const uid = decodeJwt(token).sub!;
    expect(await rootRolesOf(server, uid)).toEqual(["owner"]);
    expect((await importAdvisory(server, token)).status).toBe(200);

    const [binding] = (await ok(admin(server)("GET", `${ROOT}?identity=${uid}`)))["rootRoleBindings"] as JsonObject[];
    await ok(admin(server)("DELETE", `${ROOT}/${uidOf(binding!)}`));
    expect((await importAdvisory(server, token)).status).toBe(403);
    const renewed = await login(server, upstreamAs("grace"));
    expect(await rootRolesOf(server, uid)).toEqual(["owner"]);
    expect((await importAdvisory(server, renewed)).status).toBe(200);
  });

  it("anyone else signs in with no role at the root", async () => {
    const token = await login(server, upstreamAs("mallory"));
    expect(await rootRolesOf(server, decodeJwt(token).sub!)).toEqual([]);
    expect((await importAdvisory(server, token)).status).toBe(403);
  });

  it("an organization's identity provider does not make administrators, even for a named e-mail", async () => {
    const org = uidOf(await ok(admin(server)("POST", "/iam/v2beta1/groups", { name: `olga-org-${randomBytes(3).toString("hex")}` })));
    await ok(
      admin(server)("POST", `/iam/v2beta1/identityProviders/${org}`, {
        name: "org sso",
        oidc: { issuer: upstream.issuer, clientId: "org-login", clientSecret: "org-secret", additionalScopes: ["email"] },
      }),
    );
    const token = await login(server, upstreamAs("olga"), { org });
    expect(await rootRolesOf(server, decodeJwt(token).sub!)).toEqual([]);
    expect((await importAdvisory(server, token)).status).toBe(403);
  });

  it("the development provider never makes administrators, whatever name is typed", async () => {
    const token = await login(devServer, async (page) => {
      await page.locator("#username").fill("alice");
      await page.locator("#sign-in").click();
    });
    expect(await rootRolesOf(devServer, decodeJwt(token).sub!)).toEqual([]);
    expect((await importAdvisory(devServer, token)).status).toBe(403);
  });
});
