import { chmod, mkdir, writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

/** bin/docker-credential-platform.js: the credential helper's launcher (package.json "bin"). */
export const CREDENTIAL_HELPER_LAUNCHER = fileURLToPath(new URL("../../bin/docker-credential-platform.js", import.meta.url));

const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * Makes `docker-credential-platform` runnable from `dir` (created if missing): a shell wrapper
 * running the launcher with this test's node, as `npm install -g` would put it on PATH. Returns
 * the PATH to give skopeo or docker (`dir` first), which run `docker-credential-<name>` for a
 * host that the auth file's "credHelpers" gives to `<name>`; the helper inherits their
 * environment (PLATFORM_CONFIG_DIR, PLATFORM_TOKEN). `dir` must be on a file system that lets
 * files run (a tmpfs mounted noexec does not).
 */
export async function credentialHelperOnPath(dir: string, basePath = process.env["PATH"] ?? ""): Promise<string> {
  await mkdir(dir, { recursive: true });
  const wrapper = join(dir, "docker-credential-platform");
  await writeFile(wrapper, `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(CREDENTIAL_HELPER_LAUNCHER)} "$@"\n`);
  await chmod(wrapper, 0o755);
  return basePath ? `${dir}${delimiter}${basePath}` : dir;
}
