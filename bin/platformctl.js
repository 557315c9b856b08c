#!/usr/bin/env node
// The platformctl launcher. Where the dev dependencies are installed (a
// checkout after `npm ci`), it runs the TypeScript sources through tsx, so the
// CLI is always the current code; where they are not (`npm ci --omit=dev`, a
// container), it runs the compiled dist/ that `npm run build` made.
let tsx;
try {
  tsx = await import("tsx/esm/api");
} catch (e) {
  if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
}
if (tsx) {
  tsx.register();
  await import("../src/cli/main.ts");
} else {
  await import("../dist/src/cli/main.js");
}
