import { defineConfig } from "vitest/config";

const timeouts = { testTimeout: 30_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    // Picks the Chromium of the browser suites, once per run (Debian's, or one from npm);
    // makes the store templates (test/support/store-templates.ts), names the shared servers'
    // stores, and removes them all when the run ends.
    globalSetup: ["test/support/chromium-setup.ts", "test/support/shared-server-setup.ts"],
    // Suites start real servers and databases; two cores do best with two workers at a time.
    // Every file runs on two reused worker threads without isolation: a worker keeps the
    // modules it loaded (and its shared server, test/support/shared-server.ts) from one file to
    // the next, where a new process per file spent more time loading modules than testing.
    // Files therefore leave no global state behind (they stop their servers, restore spies).
    pool: "threads",
    isolate: false,
    poolOptions: { threads: { isolate: false, maxThreads: 2, minThreads: 1 } },
    projects: [
      { extends: true, test: { name: "unit", include: ["src/**/*.spec.ts", "test/**/*.spec.ts"], exclude: ["test/e2e/**"], ...timeouts } },
      { extends: true, test: { name: "e2e", include: ["test/e2e/**/*.spec.ts"], ...timeouts } },
    ],
  },
});
