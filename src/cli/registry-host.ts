import { isIPv6 } from "node:net";
import { CliError, EXIT } from "./errors.js";

/** A DNS name's limit; a registry address is a name (or an address) and an optional port. */
export const MAX_REGISTRY_HOST_BYTES = 255;

// The domain of an image reference (distribution's reference grammar): dot-separated labels of
// letters, digits and inner hyphens, or a bracketed IPv6 address, then an optional port.
const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
const HOST = new RegExp(`^(?:(${LABEL}(?:\\.${LABEL})*)|\\[([0-9a-f:.]+)\\])(?::([0-9]{1,5}))?$`, "i");

/** Why `host` is not a registry address (`host` or `host:port`), or undefined when it is one. */
export function registryHostProblem(host: string): string | undefined {
  if (Buffer.byteLength(host, "utf8") > MAX_REGISTRY_HOST_BYTES) return `longer than ${MAX_REGISTRY_HOST_BYTES} bytes`;
  if (host.includes("://")) return "give the host (and port) without a scheme, e.g. localhost:5000";
  if (host.includes("/")) return "give the host (and port) without a path, e.g. localhost:5000";
  const m = HOST.exec(host);
  if (!m) return "not a host name or [IPv6 address] with an optional :port";
  if (m[2] !== undefined && !isIPv6(m[2])) return `[${m[2]}] is not an IPv6 address`;
  if (m[3] !== undefined) {
    const port = Number(m[3]);
    if (port < 1 || port > 65535) return `port ${m[3]} is not between 1 and 65535`;
  }
  return undefined;
}

const clip = (s: string) => JSON.stringify(s.length > 80 ? `${s.slice(0, 80)}…` : s);

/** `--registry`: a valid `host[:port]`, lower-cased (names are case-insensitive; the key is stored so). */
export function parseRegistryHost(raw: string, source: string): string {
  const problem = registryHostProblem(raw);
  if (problem) throw new CliError(`${source}: ${clip(raw)}: ${problem}`, EXIT.usage);
  return raw.toLowerCase();
}

/**
 * The registry host of the server URL a credential helper is asked about: docker sends the
 * host (`localhost:5000`), or for Docker Hub a URL (`https://index.docker.io/v1/`); the scheme
 * and path of an http(s) URL are dropped. Throws a CliError when what is left is not a host.
 */
export function serverUrlHost(serverUrl: string): string {
  const text = serverUrl.trim();
  const url = /^https?:\/\/([^/]*)/i.exec(text);
  return parseRegistryHost(url ? url[1]! : text, "server URL");
}
