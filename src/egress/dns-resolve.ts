import type { LookupAddress } from "node:dns";
import { Resolver } from "node:dns/promises";
import type { Resolve } from "./pinned-connect.js";

export interface DnsResolveOptions {
  /** Name servers (`host:port`); the system's (resolv.conf) by default. */
  servers?: string[];
  /** How long one query waits for an answer, and how often it is sent. */
  timeoutMs?: number;
  tries?: number;
}

/** RFC 6761: localhost names are loopback, without asking a name server. */
const LOOPBACK: readonly LookupAddress[] = [
  { address: "127.0.0.1", family: 4 },
  { address: "::1", family: 6 },
];

/**
 * Resolves host names with DNS queries (c-ares), not with getaddrinfo (docs/design.md, "Egress").
 * getaddrinfo holds a thread of libuv's pool until the name server answers, and that pool of 4 also
 * runs WebCrypto (every token check) and file I/O: four deliveries to a sink whose name server is
 * slow stalled every authenticated request. Queries for a name already being resolved share the
 * answer. A name that has no A record but has AAAA (or the other way round) resolves to what it has.
 */
export function dnsResolver(opts: DnsResolveOptions = {}): Resolve {
  const resolver = new Resolver({ timeout: opts.timeoutMs ?? 2000, tries: opts.tries ?? 2 });
  if (opts.servers) resolver.setServers(opts.servers);
  const inProgress = new Map<string, Promise<readonly LookupAddress[]>>();
  return (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, "");
    if (name === "localhost" || name.endsWith(".localhost")) return Promise.resolve(LOOPBACK);
    let found = inProgress.get(name);
    if (!found) {
      found = resolveBoth(resolver, name).finally(() => inProgress.delete(name));
      inProgress.set(name, found);
    }
    return found;
  };
}

async function resolveBoth(resolver: Resolver, name: string): Promise<readonly LookupAddress[]> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name), resolver.resolve6(name)]);
  const addresses: LookupAddress[] = [
    ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ];
  if (addresses.length) return addresses;
  // Neither has an address: the A query's failure says why (ENOTFOUND, ETIMEOUT, …).
  throw v4.status === "rejected" ? v4.reason : v6.status === "rejected" ? v6.reason : new Error(`${name} has no address`);
}
