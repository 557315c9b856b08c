import { describe, expect, it } from "vitest";
import { setSharedBuffers } from "./pglite-wasm.js";

// The compiled-in shared_buffers option is rewritten in place, or not at all (pglite-wasm.ts).

const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString("latin1");
const build = (...parts: string[]): Uint8Array => new Uint8Array(Buffer.from(parts.join(""), "latin1"));

describe("setSharedBuffers", () => {
  it("rewrites the option in place, padded with NULs, so the build keeps its length and every offset", () => {
    const bytes = build("\0temp_buffers=8MB\0", "shared_buffers=128MB\0", "wal_buffers=4MB\0");
    expect(setSharedBuffers(bytes, "8MB")).toBe(true);
    expect(text(bytes)).toBe("\0temp_buffers=8MB\0shared_buffers=8MB\0\0\0wal_buffers=4MB\0");
  });

  it("leaves a build alone that does not hold the option exactly once", () => {
    for (const parts of [["shared_buffers=64MB\0"], ["shared_buffers=128MB"], ["shared_buffers=128MB\0", "x", "shared_buffers=128MB\0"]]) {
      const bytes = build(...parts);
      expect(setSharedBuffers(bytes, "8MB")).toBe(false);
      expect(text(bytes)).toBe(parts.join(""));
    }
  });

  it("refuses a value that is not a size, or does not fit where 128MB was", () => {
    const bytes = build("shared_buffers=128MB\0");
    expect(() => setSharedBuffers(bytes, "8MB; drop")).toThrow(/not a size/);
    expect(() => setSharedBuffers(bytes, "8")).toThrow(/not a size/);
    expect(() => setSharedBuffers(bytes, "12345MB")).toThrow(/longer/);
    expect(text(bytes)).toBe("shared_buffers=128MB\0");
  });
});
