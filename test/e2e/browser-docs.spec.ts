import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium } from "../support/chromium.js";
import type { TestServer } from "../support/server.js";
import { systemTmpdir } from "../support/scratch.js";
import { sharedServer } from "../support/shared-server.js";

// The Swagger UI page at /docs, in a real Chromium (test/support/chromium.ts):
// it renders the operations from /openapi.json and calls the API under the
// page's strict Content-Security-Policy (a child resource too: its uid is
// sent as `%2F`), with every file from this server and nothing fetched from
// anywhere else.

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  server = await sharedServer();
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

/** A new organization's child group, made over REST; its uid holds a `/`. */
async function childGroup(): Promise<string> {
  const post = async (path: string, name: string): Promise<string> => {
    const res = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: JSON.stringify({ name }),
    });
    expect(res.status).toBe(200);
    return ((await res.json()) as { uid: string }).uid;
  };
  const org = await post("/iam/v2beta1/groups", "docs-try-org");
  return post(`/iam/v2beta1/groups/${org}`, "docs-try-child");
}

describe("GET /docs in a browser", () => {
  it("lists the operations, with no console error, failed request or other host", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const problems: string[] = [];
    const requested: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("request", (r) => requested.push(r.url()));
    page.on("requestfailed", (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText ?? ""}`));
    page.on("response", (r) => {
      if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
    });

    const res = await page.goto(`${server.url}/docs`);
    expect(res?.status()).toBe(200);
    // Swagger UI draws one block per operation; the path is in data-path, the text has soft breaks.
    const listGroups = page.locator('.opblock-get:has(.opblock-summary-path[data-path="/iam/v2beta1/groups"])');
    await listGroups.first().waitFor({ state: "visible" });
    await page.locator('.opblock-post:has(.opblock-summary-path[data-path="/iam/v2beta1/groups"])').first().waitFor({ state: "visible" });
    expect(await page.locator(".opblock").count()).toBeGreaterThan(50);
    await expect(listGroups.first().locator(".opblock-summary-method").innerText()).resolves.toBe("GET");

    // Outside the run's scratch directory, which goes when the run ends.
    const screenshot = process.env["PLATFORM_DOCS_SCREENSHOT"] ?? join(systemTmpdir(), "platform-docs.png");
    await page.screenshot({ path: screenshot });
    console.log(`docs screenshot: ${screenshot}`);

    // "Try it out" works under the page's policy: authorize with a token, list the groups.
    await page.locator(".auth-wrapper .authorize").click();
    await page.locator(".modal-ux input").first().fill(server.token);
    await page.locator(".modal-ux .auth-btn-wrapper .authorize").click();
    await page.locator(".modal-ux .btn-done").click();
    await listGroups.first().locator(".opblock-summary-control").click();
    await listGroups.first().locator(".try-out__btn").click();
    await listGroups.first().locator(".execute").click();
    const status = listGroups.first().locator(".live-responses-table tr.response .response-col_status");
    await status.first().waitFor({ state: "visible" });
    expect((await status.first().innerText()).trim()).toBe("200");
    expect(requested.some((u) => u.startsWith(`${server.url}/iam/v2beta1/groups`))).toBe(true);

    // "Try it out" on a child resource: the page sends the child's uid percent-encoded (`%2F`), and the server takes it.
    const child = await childGroup();
    const getGroup = page.locator('.opblock-get:has(.opblock-summary-path[data-path="/iam/v2beta1/groups/{uid}"])').first();
    await getGroup.locator(".opblock-summary-control").click();
    await getGroup.locator(".try-out__btn").click();
    await getGroup.locator('tr[data-param-name="uid"] input').fill(child);
    await getGroup.locator(".execute").click();
    const childStatus = getGroup.locator(".live-responses-table tr.response .response-col_status").first();
    await childStatus.waitFor({ state: "visible" });
    expect((await childStatus.innerText()).trim()).toBe("200");
    await expect(getGroup.locator(".live-responses-table tr.response .response-col_description").first().innerText()).resolves.toContain(
      `"uid": "${child}"`,
    );
    expect(requested).toContain(`${server.url}/iam/v2beta1/groups/${child.replace("/", "%2F")}`);

    const origin = new URL(server.url).origin;
    const elsewhere = requested.filter((u) => !u.startsWith("data:") && new URL(u).origin !== origin);
    expect(elsewhere).toEqual([]);
    expect(requested).toContain(`${origin}/openapi.json`);
    expect(problems).toEqual([]);
    await context.close();
  });
});
