import { readdirSync, readFileSync } from "node:fs";
import { defineConfig } from "vitest/config";

// The e2e files that run on the worker's shared server (test/support/shared-server.ts).
const e2eDir = new URL("test/e2e/", import.meta.url);
const sharedServerFiles = readdirSync(e2eDir)
  .filter((name) => name.endsWith(".spec.ts") && readFileSync(new URL(name, e2eDir), "utf8").includes("../support/shared-server.js"))
  .map((name) => `test/e2e/${name}`);

const timeouts = { testTimeout: 30_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    // Picks the Chromium of the browser suites, once per run (Debian's, or one from npm);
    // names the shared servers' stores and removes them when the run ends.
    globalSetup: ["test/support/chromium-setup.ts", "test/support/shared-server-setup.ts"],
    // Suites start real servers and databases; two cores do best with two workers at a time.
    // Vitest 3 makes one pool of each kind for the whole run and takes its isolation from here,
    // not from a project: forks start a new process per file, threads are reused between files.
    pool: "forks",
    poolOptions: {
      forks: { maxForks: 2, minForks: 1 },
      threads: { isolate: false, maxThreads: 2, minThreads: 1 },
    },
    projects: [
      { test: { name: "unit", include: ["src/**/*.spec.ts", "test/**/*.spec.ts"], exclude: ["test/e2e/**"], pool: "forks", ...timeouts } },
      { test: { name: "e2e", include: ["test/e2e/**/*.spec.ts"], exclude: sharedServerFiles, pool: "forks", ...timeouts } },
      {
        test: {
          name: "e2e-shared",
          include: sharedServerFiles,
          // Without isolation the worker keeps its modules, and so its server, from one file to the next.
          pool: "threads",
          isolate: false,
          // After the other projects, so that no more than two workers run at once.
          sequence: { groupOrder: 1 },
          ...timeouts,
        },
      },
    ],
  },
});
