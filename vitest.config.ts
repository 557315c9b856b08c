import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.spec.ts", "test/**/*.spec.ts"],
    // Picks the Chromium of the browser suites, once per run (Debian's, or one from npm).
    globalSetup: ["test/support/chromium-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Suites start real servers and databases; two cores do best with two forks.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
