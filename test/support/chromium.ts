// The Chromium every browser suite drives, as test/support/chromium-setup.ts
// chose it for this run: Debian's when installed, otherwise the one from npm.
import { chromium, type Browser, type LaunchOptions, type Page } from "playwright-core";

const COMMON_ARGS = [
  // Root in CI containers; the sandbox needs user namespaces that containers often lack.
  "--no-sandbox",
  "--disable-dev-shm-usage",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  // Nothing but loopback: a page that reaches for the network fails the test instead of leaving the machine.
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
];

/** Which Chromium this run uses, for messages. */
export function chromiumPath(): string {
  const path = process.env["PLATFORM_TEST_CHROMIUM_PATH"];
  if (!path) throw new Error("no Chromium chosen: run the tests through vitest (its globalSetup picks one)");
  return path;
}

export async function launchChromium(options: LaunchOptions = {}): Promise<Browser> {
  const executablePath = chromiumPath();
  const libs = process.env["PLATFORM_TEST_CHROMIUM_LIBS"];
  // Not the package's own serverless flags: --single-process cannot hold several browser contexts.
  const args = [...COMMON_ARGS, ...(options.args ?? [])];
  const env = libs ? { ...process.env, LD_LIBRARY_PATH: [libs, process.env["LD_LIBRARY_PATH"]].filter(Boolean).join(":") } : undefined;
  return chromium.launch({ timeout: 30_000, ...options, executablePath, args: [...new Set(args)], ...(env ? { env } : {}) });
}

const loginPages = new WeakMap<Browser, Page>();

/**
 * The page of `browser` that browser logins run in, its cookies cleared: a login starts with no
 * upstream session and no login of ours, as in a new profile. A new profile per login cost a
 * renderer process start each (about 1.4 core-seconds over browser-login.spec's twenty logins).
 * Tests run one login at a time in it; one that needs a second browser, or watches the page's
 * requests, opens a profile of its own.
 */
export async function cookielessPage(browser: Browser): Promise<Page> {
  let page = loginPages.get(browser);
  if (!page || page.isClosed()) {
    page = await (await browser.newContext()).newPage();
    loginPages.set(browser, page);
  }
  await page.context().clearCookies();
  return page;
}
