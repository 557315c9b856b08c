import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The compiled server, as `npm start` runs it (relative to the checkout, the tests' working directory). */
export const COMPILED_SERVER = "dist/src/server/main.js";

const repo = fileURLToPath(new URL("../../", import.meta.url));
/** Held (a directory: made atomically) by the worker that builds; the other waits for it. */
const LOCK = join(repo, "dist", ".building");
const LOCK_WAIT_MS = 120_000;

/** The newest modification time of the files under `dir`, or 0 when there are none. */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

function stale(): boolean {
  let built = 0;
  try {
    built = statSync(join(repo, COMPILED_SERVER)).mtimeMs;
  } catch {
    return true;
  }
  // gen/ keeps its files' times when `buf generate` finds nothing to change.
  return newest(join(repo, "src")) > built || newest(join(repo, "gen")) > built;
}

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
