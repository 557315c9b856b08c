import { describe, expect, it } from "vitest";
import { randomHex, randomUint64 } from "./random-pool.js";

describe("random pool", () => {
  it("hands out hex of the asked length, never the same bytes twice across refills", () => {
    const seen = new Set<string>();
    // More than two pools' worth, so refills happen.
    for (let i = 0; i < 2_000; i++) {
      const h = randomHex(8);
      expect(h).toMatch(/^[0-9a-f]{16}$/);
      seen.add(h);
    }
    expect(seen.size).toBe(2_000);
    expect(randomHex(20)).toMatch(/^[0-9a-f]{40}$/);
  });

  it("gives 64-bit integers across their range", () => {
    const values = Array.from({ length: 64 }, () => randomUint64());
    expect(values.some((v) => v >= 1n << 63n)).toBe(true);
    expect(values.every((v) => v >= 0n && v < 1n << 64n)).toBe(true);
  });

  it("refuses a size it does not hand out", () => {
    for (const n of [0, -1, 257, 1.5, Number.NaN]) expect(() => randomHex(n)).toThrow(RangeError);
  });
});
