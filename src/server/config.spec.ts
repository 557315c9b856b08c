import { describe, expect, it } from "vitest";
import { ConfigError, isLoopbackHost, loadConfig } from "./config.js";

describe("development sign-in default", () => {
  it("is on only for a loopback listener without an upstream", () => {
    expect(loadConfig({}).devLogin).toBe(true);
    expect(loadConfig({ HOST: "127.0.0.1" }).devLogin).toBe(true);
    expect(loadConfig({ HOST: "::1" }).devLogin).toBe(true);
    expect(loadConfig({ HOST: "localhost" }).devLogin).toBe(true);
    expect(loadConfig({ HOST: "0.0.0.0" }).devLogin).toBe(false);
    expect(loadConfig({ HOST: "::" }).devLogin).toBe(false);
    expect(loadConfig({ HOST: "10.1.2.3" }).devLogin).toBe(false);
    expect(loadConfig({ PLATFORM_OIDC_ISSUER: "https://idp.example", PLATFORM_OIDC_CLIENT_ID: "c" }).devLogin).toBe(false);
  });

  it("follows PLATFORM_DEV_LOGIN when it is given", () => {
    expect(loadConfig({ HOST: "0.0.0.0", PLATFORM_DEV_LOGIN: "true" }).devLogin).toBe(true);
    expect(loadConfig({ HOST: "127.0.0.1", PLATFORM_DEV_LOGIN: "false" }).devLogin).toBe(false);
  });

  it("knows loopback addresses", () => {
    for (const host of ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"]) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ["0.0.0.0", "::", "192.168.1.1", "example.com", "127.0.0.1.example.com", "::ffff:127.0.0.1x"]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe("PLATFORM_ORG_CREATION", () => {
  it("defaults to people and accepts admins and anyone", () => {
    expect(loadConfig({}).orgCreation).toBe("people");
    expect(loadConfig({ PLATFORM_ORG_CREATION: "admins" }).orgCreation).toBe("admins");
    expect(loadConfig({ PLATFORM_ORG_CREATION: "anyone" }).orgCreation).toBe("anyone");
  });

  it("refuses anything else", () => {
    for (const raw of ["everyone", "ADMINS", "people\u0000"]) {
      expect(() => loadConfig({ PLATFORM_ORG_CREATION: raw })).toThrow(ConfigError);
    }
  });
});

describe("connection timeouts", () => {
  it("have defaults and can be set", () => {
    expect(loadConfig({}).timeouts).toEqual({ headersMs: 10_000, requestMs: 60_000, idleMs: 60_000 });
    expect(loadConfig({ PLATFORM_HEADERS_TIMEOUT_MS: "2000" }).timeouts.headersMs).toBe(2000);
  });

  it("refuses zero, negative, non-integer and huge values", () => {
    for (const raw of ["0", "-1", "1.5", "abc", "99999999999"]) {
      expect(() => loadConfig({ PLATFORM_HEADERS_TIMEOUT_MS: raw }), raw).toThrow(ConfigError);
    }
  });
});
