#!/usr/bin/env node
// The platformctl launcher. It runs the compiled dist/ that `npm run build` made (`npm ci` builds
// it) while dist/ is current: no file under src/ or gen/ is newer than it. A checkout being edited
// has newer sources: where the dev dependencies are installed, the launcher then runs the
// TypeScript sources through tsx, so the CLI is always the current code (tsx cost every start a
// third of a second more than the compiled code). Without them (`npm ci --omit=dev`, a container),
// dist/ is what there is.
import { distIsCurrent } from "./dist-current.js";

let tsx;
if (!distIsCurrent("dist/src/cli/main.js")) {
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
