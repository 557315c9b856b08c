import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { addressKey, ExchangeLimits } from "./exchange-limits.js";

describe("addressKey: what the per-address limit counts", () => {
  it("an IPv4 address as it is, an IPv4-mapped one unwrapped", () => {
    expect(addressKey("192.0.2.7")).toBe("192.0.2.7");
    expect(addressKey("::ffff:192.0.2.7")).toBe("192.0.2.7");
    expect(addressKey("::FFFF:192.0.2.7")).toBe("192.0.2.7");
  });

  it("an IPv6 address by its /64, however it is written", () => {
    const key = "2001:db8:0:1::/64";
    for (const a of [
      "2001:db8:0:1::1",
      "2001:db8::1:aaaa:bbbb:cccc:dddd",
      "2001:0db8:0000:0001:ffff:ffff:ffff:ffff",
      "2001:db8:0:1::1%eth0",
    ]) {
      expect(addressKey(a), a).toBe(key);
    }
    expect(addressKey("2001:db8:0:2::1")).not.toBe(key);
    expect(addressKey("::1")).toBe("0:0:0:0::/64");
    expect(addressKey("fe80::1.2.3.4")).toBe("fe80:0:0:0::/64");
  });

  it("no address at all counts as one", () => {
    expect(addressKey(undefined)).toBe("unknown");
  });
});

describe("ExchangeLimits", () => {
  it("refuses the call over the limit with RESOURCE_EXHAUSTED; each key and each kind counts apart; 0 is no limit", async () => {
    const limits = new ExchangeLimits({ perAddress: 2, perIdentity: 0 });
    await limits.fromAddress("192.0.2.1");
    await limits.fromAddress("::ffff:192.0.2.1");
    const refused = await limits.fromAddress("192.0.2.1").catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConnectError);
    expect((refused as ConnectError).code).toBe(Code.ResourceExhausted);
    await limits.fromAddress("192.0.2.2");
    for (let i = 0; i < 10; i++) await limits.refusedFor("org/robot");
    expect(await limits.identityOver("org/robot")).toBeUndefined();
  });

  it("per identity counts only refusals, and says when they reached the limit without counting the asking", async () => {
    const limits = new ExchangeLimits({ perAddress: 0, perIdentity: 2 });
    for (let i = 0; i < 5; i++) expect(await limits.identityOver("org/robot")).toBeUndefined();
    await limits.refusedFor("org/robot");
    expect(await limits.identityOver("org/robot")).toBeUndefined();
    await limits.refusedFor("org/robot");
    const over = await limits.identityOver("org/robot");
    expect(over).toBeInstanceOf(ConnectError);
    expect((over as ConnectError).code).toBe(Code.ResourceExhausted);
    expect((over as ConnectError).metadata.get("retry-after")).toMatch(/^\d+$/);
    expect(await limits.identityOver("org/other")).toBeUndefined();
  });
});
