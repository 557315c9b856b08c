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

/** A page with nothing on it, on a loopback port of its own (an origin); the calls run from page scripts. */
interface Site {
  server: http.Server;
  origin: string;
}

/** The app's origin, which the server allows. */
let site: Site;
/** Another origin, which the server does not allow. */
let otherSite: Site;
let browser: Browser;
/** Allows the site's origin (and one more), not the other site's. */
let server: TestServer;
let group: string;

async function startSite(): Promise<Site> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>app</title><p>app");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

beforeAll(async () => {
  [site, otherSite] = await Promise.all([startSite(), startSite()]);
  [server, browser] = await Promise.all([
    startTestServer({ PLATFORM_CORS_ORIGINS: `https://elsewhere.example.com,${site.origin}` }),
    launchChromium(),
  ]);
  group = uidOf(await createGroup(restClient(server.url, server.token), "browser-cors"));
});

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  for (const s of [site, otherSite]) if (s) await new Promise((resolve) => s.server.close(resolve));
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
  return page.evaluate(
    async ({ url, init }) => {
      try {
        const res = await fetch(url, init);
        return { ok: true, status: res.status, body: await res.json(), requestId: res.headers.get("x-request-id") };
      } catch (e) {
        return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
      }
    },
    { url, init },
  );
}

async function openSite(at: Site): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${at.origin}/`);
  expect(await page.evaluate("location.origin")).toBe(at.origin);
  return page;
}

const connectGetGroup = (target: TestServer, uid: string) => ({
  url: `${target.url}/platform.iam.v2beta1.GroupsService/GetGroup`,
  init: {
    method: "POST",
    headers: { authorization: `Bearer ${target.token}`, "content-type": "application/json" },
    body: JSON.stringify({ uid }),
  },
});

const restGetGroup = (target: TestServer, uid: string) => ({
  url: `${target.url}/iam/v2beta1/groups/${uid}`,
  init: { method: "GET", headers: { authorization: `Bearer ${target.token}`, "x-request-id": "from-the-browser" } },
});

describe("a page on another origin", () => {
  it("calls Connect and REST on a server that allows its origin", async () => {
    const page = await openSite(site);
    try {
      const connect = await callFrom(page, connectGetGroup(server, group).url, connectGetGroup(server, group).init);
      expect(connect, JSON.stringify(connect)).toMatchObject({ ok: true, status: 200, body: { uid: group, name: "browser-cors" } });

      const rest = await callFrom(page, restGetGroup(server, group).url, restGetGroup(server, group).init);
      // Readable, with the request id the script sent echoed and exposed.
      expect(rest, JSON.stringify(rest)).toMatchObject({ ok: true, status: 200, body: { uid: group }, requestId: "from-the-browser" });

      // A PATCH (preflighted for its method) works too, and an error's body is readable.
      const patch = await callFrom(page, `${server.url}/iam/v2beta1/groups/${group}`, {
        method: "PATCH",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: JSON.stringify({ description: "from a browser" }),
      });
      expect(patch, JSON.stringify(patch)).toMatchObject({ ok: true, status: 200, body: { description: "from a browser" } });
      const denied = await callFrom(page, `${server.url}/iam/v2beta1/groups/${group}`, {
        method: "GET",
        headers: { authorization: "Bearer not-a-token" },
      });
      expect(denied, JSON.stringify(denied)).toMatchObject({ ok: true, status: 401, body: { code: 16 } });
    } finally {
      await page.close();
    }
  });

  it("cannot call a server that does not allow its origin", async () => {
    const page = await openSite(otherSite);
    const logged: string[] = [];
    page.on("console", (message) => logged.push(message.text()));
    try {
      for (const call of [connectGetGroup(server, group), restGetGroup(server, group)]) {
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
