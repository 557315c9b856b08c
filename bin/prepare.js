// npm's `prepare` script: builds dist/ unless it is current (bin/dist-current.js's rule). npm runs
// `prepare` at `npm ci`, and also each time `npx platformctl` is first run in a checkout: npm does
// not link a project's own bins, so npx installs the checkout into its cache as a package, which
// runs `prepare` again. A full build there cost a fresh clone's first `npx platformctl` ten seconds
// and more, for the dist/ that `npm ci` had just built.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { distIsCurrent } from "./dist-current.js";

const ENTRIES = ["dist/src/server/main.js", "dist/src/cli/main.js", "dist/src/cli/docker-credential-main.js"];

if (ENTRIES.every(distIsCurrent)) {
  process.stderr.write("dist/ is current: not built again (npm run build forces it)\n");
} else {
  const run = spawnSync("npm", ["run", "build"], { stdio: "inherit", cwd: join(dirname(fileURLToPath(import.meta.url)), "..") });
  process.exitCode = run.status ?? 1;
}
