import { randomBytes } from "node:crypto";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { SecretBox, SecretBoxError } from "./secret-box.js";

const key = randomBytes(32);
const box = new SecretBox(key);
const CONTEXT = "identity_providers.oidc_client_secret:org/0123456789abcdef";

describe("SecretBox", () => {
  it("round-trips a value, with the version prefix and a fresh IV each time", () => {
    const sealed = box.seal("client-secret-ü", CONTEXT);
    expect(sealed).toMatch(/^v1:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain("client-secret");
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(box.open(sealed, CONTEXT)).toBe("client-secret-ü");
    expect(box.seal("client-secret-ü", CONTEXT)).not.toBe(sealed);
    expect(box.open(box.seal("", CONTEXT), CONTEXT)).toBe("");
  });

  it("does not open a value under other associated data (a value copied to another row)", () => {
    const sealed = box.seal("secret", CONTEXT);
    expect(() => box.open(sealed, "identity_providers.oidc_client_secret:org/fedcba9876543210")).toThrow(SecretBoxError);
    expect(() => box.open(sealed, "settings:login.state_key")).toThrow(/does not open/);
  });

  it("does not open under another master key", () => {
    const sealed = box.seal("secret", CONTEXT);
    expect(() => new SecretBox(randomBytes(32)).open(sealed, CONTEXT)).toThrow(SecretBoxError);
    expect(new SecretBox(Buffer.from(key)).open(sealed, CONTEXT)).toBe("secret");
  });

  it("refuses a tampered value: any flipped bit in iv, ciphertext or tag, a truncation, garbage", () => {
    const sealed = box.seal("secret value", CONTEXT);
    const body = Buffer.from(sealed.slice(3), "base64url");
    for (let i = 0; i < body.length; i++) {
      const flipped = Buffer.from(body);
      flipped[i] = flipped[i]! ^ 0x01;
      expect(() => box.open(`v1:${flipped.toString("base64url")}`, CONTEXT), `byte ${i}`).toThrow(SecretBoxError);
    }
    expect(() => box.open(`v1:${body.subarray(0, body.length - 1).toString("base64url")}`, CONTEXT)).toThrow(SecretBoxError);
    expect(() => box.open("v1:", CONTEXT)).toThrow(/malformed/);
    expect(() => box.open("v1:not base64!", CONTEXT)).toThrow(/malformed/);
  });

  it("reads legacy plain text (no prefix) as it is", () => {
    expect(SecretBox.isSealed("plain-old-secret")).toBe(false);
    expect(box.open("plain-old-secret", CONTEXT)).toBe("plain-old-secret");
    expect(box.open("", CONTEXT)).toBe("");
  });

  it("needs a context and a 32-byte key, and does not show its key when inspected", () => {
    expect(() => box.seal("x", "")).toThrow(RangeError);
    expect(() => box.open("x", "")).toThrow(RangeError);
    expect(() => new SecretBox(randomBytes(16))).toThrow(RangeError);
    const shown = inspect(box, { showHidden: true, depth: 5 }) + JSON.stringify(box);
    expect(shown).not.toContain(key.toString("hex"));
    expect(shown).not.toContain(key.toString("base64"));
  });
});
