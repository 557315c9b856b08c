// npm's `postinstall` script: applies the fixes in patches/ to this checkout's node_modules with
// patch-package (which dependency, and why: docs/design.md, "The PostgreSQL pool"). A patch that no
// longer applies (a dependency upgraded under it) fails the install, so it is looked at again.
//
// Installed as a package rather than worked on (`npx platformctl` in a checkout installs it into
// npx's cache, `npm install -g`), its dependencies belong to whoever installs it and patch-package,
// a devDependency, is not there: nothing is patched. The CLI, all such an install runs, never opens
// a database; a server is run from a checkout (`npm ci`) or the container image, both patched.
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

let patchPackage;
try {
  patchPackage = root.split(sep).includes("node_modules") ? undefined : createRequire(join(root, "package.json")).resolve("patch-package");
} catch {
  patchPackage = undefined;
}
if (patchPackage === undefined) {
  process.stderr.write("patch-package is not installed here (an install as a package): dependencies left as they are\n");
} else {
  const run = spawnSync(process.execPath, [patchPackage, "--error-on-fail"], { cwd: root, stdio: "inherit" });
  process.exitCode = run.status ?? 1;
}
