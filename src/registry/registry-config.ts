import { chmod, mkdir, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** What the registry's configuration names (docs/design.md, "The image registry"). */
export interface RegistryConfigInput {
  /** Where the files go: `<dir>/config.yml`, `<dir>/rootcerts.pem`. */
  dir: string;
  /** `host:port` the registry listens on (its `http.addr`). */
  addr: string;
  /** The registry's filesystem storage. */
  storageDir: string;
  /** The token endpoint clients are sent to. */
  realm: string;
  /** The registry audience: `aud` of the tokens it accepts. */
  service: string;
  /** The auth URL: `iss` of the tokens it accepts. */
  issuer: string;
  /** Where it posts push and delete events. */
  notificationsUrl: string;
  /** Sent as `Authorization: Bearer <secret>` with each notification. */
  notificationsSecret: string;
  /** Signs the registry's upload state; the same on every registry replica. */
  httpSecret: string;
  /** PEM certificates the registry trusts tokens from (current, next and any still in use). */
  bundlePem: string;
}

export interface RegistryConfigFiles {
  configFile: string;
  bundleFile: string;
}

// Every value is written as a JSON string: a JSON string is a YAML double-quoted scalar, so no
// value (a URL, a secret) can change the document's structure.
const q = (value: string): string => JSON.stringify(value);

/** The text of `config.yml` for `docker-registry serve` (distribution 2.8). */
export function registryConfigText(input: RegistryConfigInput, bundleFile: string): string {
  return `# Written by platform-api at every start: edit the server's settings, not this file.
# Run with: docker-registry serve ${join(input.dir, "config.yml")}
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: ${q(input.storageDir)}
  delete:
    enabled: true
http:
  addr: ${q(input.addr)}
  secret: ${q(input.httpSecret)}
  headers:
    X-Content-Type-Options: ["nosniff"]
auth:
  token:
    realm: ${q(input.realm)}
    service: ${q(input.service)}
    issuer: ${q(input.issuer)}
    rootcertbundle: ${q(bundleFile)}
notifications:
  endpoints:
    - name: platform-api
      url: ${q(input.notificationsUrl)}
      headers:
        Authorization: [${q(`Bearer ${input.notificationsSecret}`)}]
      timeout: 5s
      threshold: 3
      backoff: 1s
      ignore:
        mediatypes: ["application/octet-stream"]
        actions: ["pull", "mount"]
`;
}

/** Writes `config.yml` and `rootcerts.pem` into `input.dir` (0700; files 0600: they hold secrets), each replaced whole. */
export async function writeRegistryConfig(input: RegistryConfigInput): Promise<RegistryConfigFiles> {
  await mkdir(input.dir, { recursive: true, mode: 0o700 });
  await chmod(input.dir, 0o700);
  const bundleFile = join(input.dir, "rootcerts.pem");
  const configFile = join(input.dir, "config.yml");
  await replaceFile(bundleFile, input.bundlePem);
  await replaceFile(configFile, registryConfigText(input, bundleFile));
  return { configFile, bundleFile };
}

/** A registry starting meanwhile reads the old file or the new one, never half of one. */
async function replaceFile(path: string, text: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, text, { mode: 0o600 });
  await rename(tmp, path);
}
