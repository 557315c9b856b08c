import http from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.js";
import { restClient } from "../support/clients.js";
import { createGroup, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

// A real browser enforcing CORS: a page served from another loopback port
// (another origin) calls the API with a bearer token, over Connect and REST.
// Allowed by PLATFORM_CORS_ORIGINS it reads the answers; not allowed, its
// fetch fails as browsers fail cross-origin calls (a TypeError).


let site: http.Server;
let siteOrigin: string;
let browser: Browser;
/** Allows the site's origin. */
let allowing: TestServer;
/** Allows some other origin only. */
let refusing: TestServer;
let group: string;
let otherGroup: string;

beforeAll(async () => {
  // The app's origin: a page with nothing on it; the calls run from page scripts.
  site = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>app</title><p>app");
  });
  await new Promise<void>((resolve) => site.listen(0, "127.0.0.1", resolve));
  siteOrigin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  [allowing, refusing, browser] = await Promise.all([
    startTestServer({ PLATFORM_CORS_ORIGINS: `https://elsewhere.example.com,${siteOrigin}` }),
    startTestServer({ PLATFORM_CORS_ORIGINS: "https://elsewhere.example.com" }),
    launchChromium(),
  ]);
  group = uidOf(await createGroup(restClient(allowing.url, allowing.token), "browser-cors"));
  otherGroup = uidOf(await createGroup(restClient(refusing.url, refusing.token), "browser-cors"));
});

afterAll(async () => {
  await browser?.close();
  await Promise.all([allowing?.stop(), refusing?.stop()]);
  await new Promise((resolve) => site?.close(resolve));
});

interface Outcome {
  ok: boolean;
  status?: number;
  body?: unknown;
  requestId?: string | null;
  error?: string;
}

/** Runs one fetch in the page (so from the site's origin), reporting what the script could see. */
function callFrom(page: Page, url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<Outcome> {
  return page.evaluate(async ({ url, init }) => {
    try {
      const res = await fetch(url, init);
      return { ok: true, status: res.status, body: await res.json(), requestId: res.headers.get("x-request-id") };
    } catch (e) {
      return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
    }
  }, { url, init });
}

async function openSite(): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${siteOrigin}/`);
  expect(await page.evaluate("location.origin")).toBe(siteOrigin);
  return page;
}

const connectGetGroup = (target: TestServer, uid: string) => ({
  url: `${target.url}/platform.iam.v2beta1.GroupsService/GetGroup`,
  init: { method: "POST", headers: { authorization: `Bearer ${target.token}`, "content-type": "application/json" }, body: JSON.stringify({ uid }) },
});

const restGetGroup = (target: TestServer, uid: string) => ({
  url: `${target.url}/iam/v2beta1/groups/${uid}`,
  init: { method: "GET", headers: { authorization: `Bearer ${target.token}`, "x-request-id": "from-the-browser" } },
});

describe("a page on another origin", () => {
  it("calls Connect and REST on a server that allows its origin", async () => {
    const page = await openSite();
    try {
      const connect = await callFrom(page, connectGetGroup(allowing, group).url, connectGetGroup(allowing, group).init);
      expect(connect, JSON.stringify(connect)).toMatchObject({ ok: true, status: 200, body: { uid: group, name: "browser-cors" } });

      const rest = await callFrom(page, restGetGroup(allowing, group).url, restGetGroup(allowing, group).init);
      // Readable, with the request id the script sent echoed and exposed.
      expect(rest, JSON.stringify(rest)).toMatchObject({ ok: true, status: 200, body: { uid: group }, requestId: "from-the-browser" });

      // A PATCH (preflighted for its method) works too, and an error's body is readable.
      const patch = await callFrom(page, `${allowing.url}/iam/v2beta1/groups/${group}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${allowing.token}`, "content-type": "application/json" },
        body: JSON.stringify({ description: "from a browser" }),
      });
      expect(patch, JSON.stringify(patch)).toMatchObject({ ok: true, status: 200, body: { description: "from a browser" } });
      const denied = await callFrom(page, `${allowing.url}/iam/v2beta1/groups/${group}`, { method: "GET", headers: { authorization: "Bearer not-a-token" } });
      expect(denied, JSON.stringify(denied)).toMatchObject({ ok: true, status: 401, body: { code: 16 } });
    } finally {
      await page.close();
    }
  });

  it("cannot call a server that does not allow its origin", async () => {
    const page = await openSite();
    const logged: string[] = [];
    page.on("console", (message) => logged.push(message.text()));
    try {
      for (const call of [connectGetGroup(refusing, otherGroup), restGetGroup(refusing, otherGroup)]) {
        const outcome = await callFrom(page, call.url, call.init);
        expect(outcome.ok, JSON.stringify(outcome)).toBe(false);
        expect(outcome.error).toMatch(/^TypeError/);
      }
      // The browser says why: CORS, not an unreachable server.
      await expect.poll(() => logged.filter((m) => m.includes("CORS policy")).length).toBe(2);
    } finally {
      await page.close();
    }
  });
});
