import type { LookupAddress } from "node:dns";
import type { LookupFunction } from "node:net";
import { buildConnector } from "undici";

/** Resolves a host name to every address it has (dns-resolve.ts by default). */
export type Resolve = (hostname: string) => Promise<readonly LookupAddress[]>;

/** undici's connect options for one request, with the addresses the guard checked for its host. */
export interface PinnedTarget extends buildConnector.Options {
  addresses: readonly LookupAddress[];
}

/**
 * Opens the connection of one request to one of `target.addresses`. The
 * default is undici's own connector; tests pass a spy to see where a
 * request would go without sending a packet.
 */
export type PinnedConnect = (target: PinnedTarget, callback: buildConnector.Callback) => void;

/**
 * A `lookup` for net/tls.connect that answers with the checked addresses
 * only: the socket goes where the check looked, so a second DNS answer
 * (rebinding) is never consulted. TLS still sends and verifies the
 * original host name, since the connector keeps it as `host`/servername.
 */
export function pinnedLookup(hostname: string, addresses: readonly LookupAddress[]): LookupFunction {
  return (host, options, callback) => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : options.family;
    const usable = addresses.filter((a) => !family || a.family === family);
    const first = usable[0];
    if (host !== hostname || !first) {
      const err: NodeJS.ErrnoException = new Error(`no checked address for ${host}`);
      err.code = "ENOTFOUND";
      callback(err, "", 0);
    } else if (options.all) {
      callback(
        null,
        usable.map((a) => ({ address: a.address, family: a.family })),
      );
    } else {
      callback(null, first.address, first.family);
    }
  };
}

/** The default PinnedConnect: undici's connector with the pinned lookup and a connect timeout. */
export function pinnedConnector(timeoutMs: number): PinnedConnect {
  return ({ addresses, ...options }, callback) => {
    buildConnector({ timeout: timeoutMs, lookup: pinnedLookup(options.hostname, addresses) })(options, callback);
  };
}
