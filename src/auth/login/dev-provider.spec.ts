import { describe, expect, it } from "vitest";
import { isLoopbackHost } from "./dev-provider.js";

describe("isLoopbackHost", () => {
  it("knows loopback addresses", () => {
    for (const host of ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"]) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ["0.0.0.0", "::", "192.168.1.1", "example.com", "127.0.0.1.example.com", "::ffff:127.0.0.1x"]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});
