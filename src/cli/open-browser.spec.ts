import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { openBrowser } from "./open-browser.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platformctl-browser-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("openBrowser", () => {
  it("runs $BROWSER with the URL, in the environment it is given (not the process's)", async () => {
    const seen = join(dir, "seen.txt");
    const browser = join(dir, "browser.sh");
    await writeFile(browser, `#!/bin/sh\nprintf '%s %s' "$PLATFORMCTL_TEST_MARK" "$1" > '${seen}'\n`);
    await chmod(browser, 0o755);
    expect(process.env["PLATFORMCTL_TEST_MARK"]).toBeUndefined();
    openBrowser("http://127.0.0.1:1/oauth?a=1&b=2", { PATH: process.env["PATH"], BROWSER: browser, PLATFORMCTL_TEST_MARK: "from-io" });
    // detached and not waited for: the file appears when the opener has run
    await vi.waitFor(async () => expect(await readFile(seen, "utf8")).toBe("from-io http://127.0.0.1:1/oauth?a=1&b=2"), { timeout: 5_000 });
  });
});
