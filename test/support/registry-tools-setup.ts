// Vitest global setup: obtains docker-registry and skopeo once for the whole run
// (test/support/registry-tools.ts: from PATH, or unpacked from Debian's packages into
// node_modules/.cache, downloaded on a machine's first run only) and hands them to the
// workers in an environment variable, as chromium-setup.ts does: worker threads start
// after the global setups and inherit process.env. A failure does not stop the run: the
// tests that need the tools fail with its message, and the others run.
import { obtainRegistryTools, REGISTRY_TOOLS_VARIABLE } from "./registry-tools.js";

export default async function setup(): Promise<void> {
  try {
    const tools = await obtainRegistryTools({ log: (line) => process.stderr.write(`registry tools: ${line}\n`) });
    process.env[REGISTRY_TOOLS_VARIABLE] = JSON.stringify({ tools });
  } catch (error) {
    process.env[REGISTRY_TOOLS_VARIABLE] = JSON.stringify({ error: (error as Error).message });
  }
}
