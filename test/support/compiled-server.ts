import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { distIsCurrent } from "../../bin/dist-current.js";

/** The compiled server, as `npm start` runs it (relative to the checkout, the tests' working directory). */
export const COMPILED_SERVER = "dist/src/server/main.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));
/** Held (a directory: made atomically) by the worker that builds; the other waits for it. */
const LOCK = join(repo, "dist", ".building");
const LOCK_WAIT_MS = 120_000;

/** dist/ is missing or older than a source file (the launcher's rule too: bin/dist-current.js). */
const stale = (): boolean => !distIsCurrent(COMPILED_SERVER);

/**
 * Builds dist/ (`npm run build`) when it is missing or older than a source file, so that a test
 * running the compiled server runs the code under test. `npm ci` builds it; after an edit, the
 * first test that needs it builds it again, once (a worker that finds another building waits).
 */
export function ensureCompiledServer(): void {
  const until = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    // While another worker builds, dist/ is half written: wait for it to finish before looking.
    if (!existsSync(LOCK)) {
      if (!stale()) return;
      mkdirSync(join(repo, "dist"), { recursive: true });
      let locked = false;
      try {
        mkdirSync(LOCK);
        locked = true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
      }
      if (locked) {
        try {
          execFileSync("npm", ["run", "--silent", "build"], { cwd: repo, stdio: "inherit" });
        } finally {
          rmSync(LOCK, { recursive: true, force: true });
        }
        return;
      }
    }
    if (Date.now() > until) throw new Error(`dist/ is being built by another run (${LOCK} exists); remove it if no build is running`);
    execFileSync("sleep", ["0.2"]);
  }
}
