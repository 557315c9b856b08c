#!/usr/bin/env node
// The platformctl launcher. It runs the compiled dist/ that `npm run build` made (`npm ci` builds
// it) while dist/ is current: no file under src/ or gen/ is newer than it. A checkout being edited
// has newer sources: where the dev dependencies are installed, the launcher then runs the
// TypeScript sources through tsx, so the CLI is always the current code (tsx cost every start a
// third of a second more than the compiled code). Without them (`npm ci --omit=dev`, a container),
// dist/ is what there is.
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const compiled = join(root, "dist", "src", "cli", "main.js");

/** The newest modification time of the files under `dir` (0 when there is no such directory). */
function newest(dir) {
  let latest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true, recursive: true });
  } catch (e) {
    if (e?.code === "ENOENT") return 0;
    throw e;
  }
  for (const entry of entries) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return latest;
}

function compiledIsCurrent() {
  let built;
  try {
    built = statSync(compiled).mtimeMs;
  } catch {
    return false;
  }
  return newest(join(root, "src")) <= built && newest(join(root, "gen")) <= built;
}

let tsx;
if (!compiledIsCurrent()) {
  try {
    tsx = await import("tsx/esm/api");
  } catch (e) {
    if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
  }
}
if (tsx) {
  tsx.register();
  await import("../src/cli/main.ts");
} else {
  await import("../dist/src/cli/main.js");
}
