import { describe, expect, it } from "vitest";
import { PageTokenCodec, fingerprint } from "./page-token.js";

const codec = new PageTokenCodec(Buffer.alloc(32, 7));
const payload = {
  position: { value: "bravo", uid: "abc/def" },
  fingerprint: fingerprint({ q: 1 }),
  issuedAt: 1_700_000_000_000,
  totalCount: 12345678901234n,
};

describe("PageTokenCodec", () => {
  it("round-trips a position, fingerprint, time and a 64-bit total", () => {
    const token = codec.encode(payload);
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(codec.decode(token)).toEqual(payload);
  });

  it("rejects a token signed with another key", () => {
    const other = new PageTokenCodec(Buffer.alloc(32, 8)).encode(payload);
    expect(() => codec.decode(other)).toThrow(/page_token/);
  });

  it("rejects a payload changed after signing, and garbage", () => {
    const [, sig] = codec.encode(payload).split(".");
    const forged = Buffer.from(JSON.stringify({ k: "zulu", u: "abc/def", f: payload.fingerprint, t: payload.issuedAt, n: "1" })).toString(
      "base64url",
    );
    for (const bad of [`${forged}.${sig}`, "", ".", "abc", "a.b.c", "x".repeat(5000)]) {
      expect(() => codec.decode(bad), bad).toThrow(/page_token/);
    }
  });

  it("fingerprints queries stably and distinguishes them", () => {
    expect(fingerprint({ a: 1, b: "x" })).toBe(fingerprint({ a: 1, b: "x" }));
    expect(fingerprint({ a: 1 })).not.toBe(fingerprint({ a: 2 }));
  });
});
