import { describe, expect, it } from "vitest";
import { addressAllowed, addressRange } from "./address-policy.js";

// [address, range, allowed in strict mode, allowed with the development flag]
const TABLE: [string, string, boolean, boolean][] = [
  ["93.184.216.34", "unicast", true, true],
  ["8.8.8.8", "unicast", true, true],
  ["2606:4700::1", "unicast", true, true],
  ["2a00:1450:4001:80b::200e", "unicast", true, true],
  ["::ffff:93.184.216.34", "unicast", true, true],
  ["127.0.0.1", "loopback", false, true],
  ["127.255.255.254", "loopback", false, true],
  ["::1", "loopback", false, true],
  ["::ffff:127.0.0.1", "loopback", false, true],
  ["10.0.0.1", "private", false, false],
  ["172.16.0.1", "private", false, false],
  ["172.31.255.255", "private", false, false],
  ["192.168.1.1", "private", false, false],
  ["::ffff:10.0.0.1", "private", false, false],
  ["::ffff:192.168.0.1", "private", false, false],
  ["169.254.169.254", "linkLocal", false, false],
  ["::ffff:169.254.169.254", "linkLocal", false, false],
  ["fe80::1", "linkLocal", false, false],
  ["fe80::1%eth0", "linkLocal", false, false],
  ["100.64.0.1", "carrierGradeNat", false, false],
  ["100.127.255.254", "carrierGradeNat", false, false],
  ["0.0.0.0", "unspecified", false, false],
  ["0.1.2.3", "unspecified", false, false],
  ["::", "unspecified", false, false],
  ["255.255.255.255", "broadcast", false, false],
  ["224.0.0.1", "multicast", false, false],
  ["ff02::1", "multicast", false, false],
  ["fc00::1", "uniqueLocal", false, false],
  ["fd12:3456::1", "uniqueLocal", false, false],
  ["fec0::1", "deprecatedSiteLocal", false, false],
  ["2001:db8::1", "reserved", false, false],
  ["192.0.2.1", "reserved", false, false],
  ["198.51.100.7", "reserved", false, false],
  ["203.0.113.9", "reserved", false, false],
  ["198.18.0.1", "reserved", false, false],
  ["240.0.0.1", "reserved", false, false],
  // Embeddings of IPv4 in IPv6: NAT64, 6to4, Teredo, SIIT.
  ["64:ff9b::a00:1", "rfc6052", false, false],
  ["64:ff9b:1::a9fe:a9fe", "rfc6052", false, false],
  ["2002:a00:1::1", "6to4", false, false],
  ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo", false, false],
  ["::ffff:0:10.0.0.1", "rfc6145", false, false],
  // Outside 2000::/3 although ipaddr.js calls it unicast.
  ["4000::1", "reserved", false, false],
  ["not an address", "invalid", false, false],
  ["", "invalid", false, false],
];

describe("addressAllowed", () => {
  it.each(TABLE)("%s is %s (strict: %s, development: %s)", (address, range, strict, development) => {
    expect(addressRange(address)).toBe(range);
    expect(addressAllowed(address, { allowLoopback: false })).toBe(strict);
    expect(addressAllowed(address, { allowLoopback: true })).toBe(development);
  });
});
