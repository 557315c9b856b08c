import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.spec.ts", "test/**/*.spec.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Picks the Chromium of the browser suites, once per run (Debian's, or one from npm);
    // obtains docker-registry and skopeo (from PATH, or Debian's packages unpacked into
    // node_modules/.cache: test/support/registry-tools.ts);
    // gives the run a scratch directory as TMPDIR (test/support/scratch.ts), makes the store
    // templates (test/support/store-templates.ts), names the shared servers' stores and the
    // run's databases, and removes them all when the run ends.
    globalSetup: ["test/support/chromium-setup.ts", "test/support/registry-tools-setup.ts", "test/support/shared-server-setup.ts"],
    // Suites start real servers and databases; two cores do best with two workers at a time.
    // Every file runs on two reused worker threads without isolation: a worker keeps the
    // modules it loaded (and its shared server, test/support/shared-server.ts) from one file to
    // the next, where a new process per file spent more time loading modules than testing.
    // Files therefore leave no global state behind (they stop their servers, restore spies).
    // Both workers share the process's libuv thread pool: `npm test` sets UV_THREADPOOL_SIZE.
    // One project: vitest runs projects without isolation one after another, each on new
    // workers, and a project's last file would leave the other worker idle.
    pool: "threads",
    isolate: false,
    poolOptions: { threads: { isolate: false, maxThreads: 2, minThreads: 1 } },
  },
});
