import type { Readable } from "node:stream";
import { buildInfo } from "../package/index.js";
import { ConfigStore, configDir } from "./config-store.js";
import { currentToken, tokenClaims } from "./credentials.js";
import { describeError } from "./errors.js";
import type { CliIo } from "./io.js";
import { serverUrlHost } from "./registry-host.js";

// docker-credential-platform: docker's credential-helper protocol, answered from platformctl's
// own login (docs/cli.md, "docker, podman and skopeo"). docker, podman and skopeo
// run it for the hosts a config file's "credHelpers" gives to "platform" (platformctl auth
// configure-docker). The platform login is the only source of credentials: store and erase
// change nothing.

export const HELPER_PROGRAM = "docker-credential-platform";

/** The exact text docker (and containers/image) take for "no credentials here, go on without". */
export const NOT_FOUND_MESSAGE = "credentials not found in native keychain";

/** `get` and `erase` receive a server URL: a host, or a short URL. */
export const MAX_SERVER_URL_BYTES = 4 * 1024;

/** `store` receives {ServerURL, Username, Secret}: room for a long token, no more. */
export const MAX_STORE_INPUT_BYTES = 64 * 1024;

/** The user name given when the token names no identity. */
export const DEFAULT_USERNAME = "platform";

const USAGE = `Usage: ${HELPER_PROGRAM} <get|store|erase|list|version>`;

/** A failure the helper reports as its one line (on stdout, where docker reads it back). */
class HelperError extends Error {}

/** All of `stream` as UTF-8, refused once it passes `maxBytes`. */
export async function readBounded(stream: Readable, maxBytes: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > maxBytes) {
      stream.destroy();
      throw new HelperError(`${what} is longer than ${maxBytes} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The identity uid the token was issued to, or "platform" when it does not say. */
export function usernameOf(token: string | undefined): string {
  const sub = token ? tokenClaims(token).sub : undefined;
  return typeof sub === "string" && sub ? sub : DEFAULT_USERNAME;
}

async function get(io: CliIo, store: ConfigStore): Promise<number> {
  const serverUrl = (await readBounded(io.stdin, MAX_SERVER_URL_BYTES, "the server URL")).trim();
  let host: string;
  try {
    host = serverUrlHost(serverUrl);
  } catch (e) {
    throw new HelperError(describeError(e).line);
  }
  const api = await store.registryApi(host);
  if (!api) {
    io.stdout.write(`${NOT_FOUND_MESSAGE}\n`);
    return 1;
  }
  // Renews a workload's token by exchanging its OIDC token again; an expired browser login fails here.
  const secret = await currentToken(store, api, io.env);
  io.stdout.write(`${JSON.stringify({ ServerURL: serverUrl, Username: usernameOf(secret), Secret: secret })}\n`);
  return 0;
}

async function list(io: CliIo, store: ConfigStore): Promise<number> {
  const entries = await Promise.all(
    Object.entries(await store.registries()).map(async ([host, api]) => [
      host,
      usernameOf(io.env["PLATFORM_TOKEN"] || (await store.token(api))?.token),
    ]),
  );
  io.stdout.write(`${JSON.stringify(Object.fromEntries(entries))}\n`);
  return 0;
}

/**
 * Runs one credential-helper action (`argv` without node and the script) and resolves with its
 * exit code: 0, or 1 with the reason on stdout (which docker shows in its error) and on stderr.
 * It never exits the process: src/cli/docker-credential-main.ts sets the code, tests call it.
 */
export async function runCredentialHelper(argv: string[], io: CliIo): Promise<number> {
  const store = new ConfigStore(configDir(io.env));
  try {
    switch (argv.length === 1 ? argv[0] : undefined) {
      case "get":
        return await get(io, store);
      case "list":
        return await list(io, store);
      case "store":
        await readBounded(io.stdin, MAX_STORE_INPUT_BYTES, "the credentials JSON");
        return 0;
      case "erase":
        await readBounded(io.stdin, MAX_SERVER_URL_BYTES, "the server URL");
        return 0;
      case "version":
        io.stdout.write(`${HELPER_PROGRAM} (platformctl ${buildInfo().version})\n`);
        return 0;
      default:
        io.stderr.write(`${USAGE}\n`);
        return 1;
    }
  } catch (e) {
    const line = e instanceof HelperError ? e.message : describeError(e).line;
    io.stdout.write(`${line}\n`);
    io.stderr.write(`${HELPER_PROGRAM}: ${line}\n`);
    return 1;
  }
}
