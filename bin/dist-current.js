// Whether dist/ was built from the sources as they are now: the rule the platformctl launcher and
// the tests that run the compiled server (test/support/compiled-server.ts) share.
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The newest modification time of the files under `dir` that the build compiles (0 when there is
 * no such directory): specs are not built (tsconfig.build.json), so editing one leaves dist/ current.
 */
function newest(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  } catch (e) {
    if (e?.code === "ENOENT") return 0;
    throw e;
  }
  let latest = 0;
  for (const entry of entries) {
    if (entry.isFile() && !entry.name.endsWith(".spec.ts"))
      latest = Math.max(latest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return latest;
}

/**
 * True when `entry` (a path under dist/, relative to the checkout) exists and no file under src/
 * or gen/ is newer than it. (`buf generate` keeps gen/'s file times when it finds nothing to change.)
 */
export function distIsCurrent(entry) {
  let built;
  try {
    built = statSync(join(root, entry)).mtimeMs;
  } catch {
    return false;
  }
  return newest(join(root, "src")) <= built && newest(join(root, "gen")) <= built;
}

/**
 * Runs the program whose module is `src/<name>.ts` (compiled: `dist/src/<name>.js`): dist/ while it
 * is current, else the TypeScript sources through tsx where the dev dependencies are installed,
 * else dist/ as it is (`npm ci --omit=dev`, a container).
 */
export async function launch(name) {
  let tsx;
  if (!distIsCurrent(`dist/src/${name}.js`)) {
    try {
      tsx = await import("tsx/esm/api");
    } catch (e) {
      if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
    }
  }
  if (tsx) {
    tsx.register();
    await import(`../src/${name}.ts`);
  } else {
    await import(`../dist/src/${name}.js`);
  }
}
