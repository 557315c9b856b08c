import ipaddr from "ipaddr.js";

/** Global unicast IPv6 (RFC 4291): anything outside it is special-purpose or unassigned. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");

/**
 * The ipaddr.js range name of `address`, judged as IPv4 when it is an
 * IPv4-mapped IPv6 address. IPv6 outside 2000::/3 (for instance the
 * deprecated IPv4-compatible ::a.b.c.d) is "reserved" even though
 * ipaddr.js calls it unicast; an unparsable address is "invalid".
 */
export function addressRange(address: string): string {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return "invalid";
  }
  const range = parsed.range();
  if (range === "unicast" && parsed.kind() === "ipv6" && !parsed.match(GLOBAL_UNICAST_V6)) return "reserved";
  return range;
}

/**
 * True when the server may connect to `address`: public unicast only, plus
 * loopback when `allowLoopback` (the development flag). Private, link-local,
 * CGNAT, multicast, documentation, NAT64/6to4/Teredo and other special
 * ranges are never allowed; a cloud metadata endpoint is one of them.
 */
export function addressAllowed(address: string, opts: { allowLoopback: boolean }): boolean {
  const range = addressRange(address);
  return range === "unicast" || (opts.allowLoopback && range === "loopback");
}
