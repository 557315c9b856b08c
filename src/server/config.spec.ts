import { describe, expect, it } from "vitest";
import { ConfigError, developmentWarnings, drainMs, loadConfig, parseCorsOrigins, parseTrustedIdpHosts } from "./config.js";

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

  it("is off behind a reverse proxy: a loopback listener whose base or auth URL is not loopback", () => {
    expect(loadConfig({ PLATFORM_BASE_URL: "https://platform.example.com" }).devLogin).toBe(false);
    expect(loadConfig({ HOST: "127.0.0.1", PLATFORM_AUTH_URL: "https://login.example.com" }).devLogin).toBe(false);
    expect(loadConfig({ PLATFORM_BASE_URL: "http://10.0.0.5:8080" }).devLogin).toBe(false);
    expect(loadConfig({ PLATFORM_BASE_URL: "http://127.0.0.1.nip.io:8080" }).devLogin).toBe(false);
    // Loopback URLs, however written, keep it on.
    for (const url of ["http://localhost:8080", "http://127.0.0.1:9000/api", "http://[::1]:8080"]) {
      expect(loadConfig({ PLATFORM_BASE_URL: url, PLATFORM_AUTH_URL: url }).devLogin, url).toBe(true);
    }
  });

  it("follows PLATFORM_DEV_LOGIN when it is given, public URLs included", () => {
    expect(loadConfig({ PLATFORM_BASE_URL: "https://platform.example.com", PLATFORM_DEV_LOGIN: "true" }).devLogin).toBe(true);
  });

  it("follows PLATFORM_DEV_LOGIN when it is given", () => {
    expect(loadConfig({ HOST: "0.0.0.0", PLATFORM_DEV_LOGIN: "true" }).devLogin).toBe(true);
    expect(loadConfig({ HOST: "127.0.0.1", PLATFORM_DEV_LOGIN: "false" }).devLogin).toBe(false);
  });

  it("on by default, serves only requests straight from this machine; set explicitly, any", () => {
    expect(loadConfig({})).toMatchObject({ devLogin: true, devLoginLocalOnly: true });
    expect(loadConfig({ HOST: "127.0.0.1", PLATFORM_DEV_LOGIN: "" })).toMatchObject({ devLogin: true, devLoginLocalOnly: true });
    expect(loadConfig({ PLATFORM_DEV_LOGIN: "true" })).toMatchObject({ devLogin: true, devLoginLocalOnly: false });
    expect(loadConfig({ HOST: "0.0.0.0", PLATFORM_DEV_LOGIN: "true" })).toMatchObject({ devLogin: true, devLoginLocalOnly: false });
    expect(loadConfig({ PLATFORM_DEV_LOGIN: "false" })).toMatchObject({ devLogin: false, devLoginLocalOnly: false });
    expect(loadConfig({ HOST: "0.0.0.0" })).toMatchObject({ devLogin: false, devLoginLocalOnly: false });
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

describe("event stream caps", () => {
  it("default to 1024 streams per server, 64 reading one organization, 16 per identity, and can be set", () => {
    expect(loadConfig({}).events.streams).toEqual({ perServer: 1024, perOrganization: 64, perIdentity: 16 });
    const set = loadConfig({
      PLATFORM_MAX_EVENT_STREAMS: "5000",
      PLATFORM_MAX_EVENT_STREAMS_PER_ORG: "100",
      PLATFORM_MAX_EVENT_STREAMS_PER_IDENTITY: "4",
    });
    expect(set.events.streams).toEqual({ perServer: 5000, perOrganization: 100, perIdentity: 4 });
  });

  it("refuse zero, negative, non-integer and huge values", () => {
    for (const name of ["PLATFORM_MAX_EVENT_STREAMS", "PLATFORM_MAX_EVENT_STREAMS_PER_ORG", "PLATFORM_MAX_EVENT_STREAMS_PER_IDENTITY"]) {
      for (const raw of ["0", "-1", "1.5", "abc", "100001"]) {
        expect(() => loadConfig({ [name]: raw }), `${name}=${raw}`).toThrow(ConfigError);
      }
    }
  });
});

describe("PLATFORM_CORS_ORIGINS", () => {
  it("is empty by default: no origin is allowed", () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ PLATFORM_CORS_ORIGINS: "" }).corsOrigins).toEqual([]);
    expect(loadConfig({ PLATFORM_CORS_ORIGINS: " , " }).corsOrigins).toEqual([]);
  });

  it("keeps exact origins, in the form browsers send them", () => {
    expect(loadConfig({ PLATFORM_CORS_ORIGINS: "https://app.example.com, http://localhost:5173" }).corsOrigins).toEqual([
      "https://app.example.com",
      "http://localhost:5173",
    ]);
    // Lower-case host and scheme, no default port, punycode, IPv6 in brackets; duplicates once.
    expect(
      parseCorsOrigins("HTTPS://App.Example.COM:443,http://127.0.0.1:80,https://bücher.example,http://[::1]:8080,https://app.example.com"),
    ).toEqual(["https://app.example.com", "http://127.0.0.1", "https://xn--bcher-kva.example", "http://[::1]:8080"]);
  });

  it("refuses anything that is not an origin, naming the entry", () => {
    const bad = [
      "https://app.example.com/", // a path, even just "/"
      "https://app.example.com/app",
      "https://app.example.com?x=1",
      "https://app.example.com#top",
      "https://user:pass@app.example.com",
      "https://user@app.example.com",
      "*",
      "https://*.example.com",
      "https://app.*.com",
      "ftp://app.example.com",
      "file:///etc/passwd",
      "javascript://app.example.com",
      "app.example.com",
      "null",
      "https://app.example.com\u0000",
      "https://app\u0000.example.com",
      "https://app example.com",
      "https://",
      "https://app.example.com:99999",
    ];
    for (const entry of bad) {
      let thrown: unknown;
      try {
        loadConfig({ PLATFORM_CORS_ORIGINS: `https://fine.example.com,${entry}` });
      } catch (e) {
        thrown = e;
      }
      expect(thrown, JSON.stringify(entry)).toBeInstanceOf(ConfigError);
      const message = (thrown as Error).message;
      expect(message).toContain("PLATFORM_CORS_ORIGINS");
      expect(message, JSON.stringify(entry)).toContain(JSON.stringify(entry));
    }
  });

  it("suggests the origin when an entry has a path", () => {
    expect(() => parseCorsOrigins("https://App.example.com/")).toThrow(/write "https:\/\/app\.example\.com"/);
  });
});

describe("outbound budgets and token exchange rate limits", () => {
  it("have defaults and can be set", () => {
    expect(loadConfig({}).outbound).toEqual({
      upstreamInFlight: 16,
      organizationInFlight: 4,
      organizationsInFlight: 64,
      exchangesPerAddress: 120,
      exchangesPerIdentity: 600,
      loginsPerAddress: 60,
      signInInFlightPerAddress: 2,
    });
    const set = loadConfig({
      PLATFORM_EGRESS_UPSTREAM_IN_FLIGHT: "8",
      PLATFORM_EGRESS_ORG_IN_FLIGHT: "2",
      PLATFORM_EGRESS_ORGS_IN_FLIGHT: "10",
      PLATFORM_STS_RATE_PER_ADDRESS: "0",
      PLATFORM_STS_RATE_PER_IDENTITY: "30",
      PLATFORM_LOGIN_RATE_PER_ADDRESS: "0",
      PLATFORM_LOGIN_IN_FLIGHT_PER_ADDRESS: "1",
    }).outbound;
    expect(set).toEqual({
      upstreamInFlight: 8,
      organizationInFlight: 2,
      organizationsInFlight: 10,
      exchangesPerAddress: 0,
      exchangesPerIdentity: 30,
      loginsPerAddress: 0,
      signInInFlightPerAddress: 1,
    });
  });

  it("refuses budgets of zero, non-integers, and an organization's share larger than all organizations'", () => {
    for (const [name, raw] of [
      ["PLATFORM_EGRESS_UPSTREAM_IN_FLIGHT", "0"],
      ["PLATFORM_EGRESS_ORG_IN_FLIGHT", "0"],
      ["PLATFORM_EGRESS_ORGS_IN_FLIGHT", "1.5"],
      ["PLATFORM_STS_RATE_PER_ADDRESS", "-1"],
      ["PLATFORM_STS_RATE_PER_IDENTITY", "lots"],
      ["PLATFORM_LOGIN_RATE_PER_ADDRESS", "-1"],
      ["PLATFORM_LOGIN_IN_FLIGHT_PER_ADDRESS", "0"],
    ] as const) {
      expect(() => loadConfig({ [name]: raw }), name).toThrow(new RegExp(name));
    }
    expect(() => loadConfig({ PLATFORM_EGRESS_ORG_IN_FLIGHT: "8", PLATFORM_EGRESS_ORGS_IN_FLIGHT: "4" })).toThrow(
      /must not exceed PLATFORM_EGRESS_ORGS_IN_FLIGHT/,
    );
  });
});

describe("development-only settings", () => {
  it("warn about nothing in a production configuration", () => {
    const production = {
      PLATFORM_BASE_URL: "https://platform.example.com",
      PLATFORM_OIDC_ISSUER: "https://idp.example",
      PLATFORM_OIDC_CLIENT_ID: "c",
    };
    expect(developmentWarnings(loadConfig(production))).toEqual([]);
  });

  it("warn once for each setting in force: development sign-in, development egress", () => {
    const both = developmentWarnings(loadConfig({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true" }));
    expect(both).toHaveLength(2);
    expect(both[0]).toMatch(/^development sign-in is on \(PLATFORM_DEV_LOGIN\)/);
    expect(both[1]).toMatch(/^development egress is on \(PLATFORM_ALLOW_INSECURE_ISSUERS\)/);
    // The default on a developer's machine warns too: it is still a server where anyone is anyone.
    expect(developmentWarnings(loadConfig({}))).toHaveLength(1);
    expect(developmentWarnings(loadConfig({ PLATFORM_DEV_LOGIN: "false" }))).toEqual([]);
  });

  it("warn loudly when development sign-in is on for a server others can reach", () => {
    for (const env of [
      { PLATFORM_BASE_URL: "https://platform.example.com", PLATFORM_DEV_LOGIN: "true" },
      { PLATFORM_AUTH_URL: "https://login.example.com", PLATFORM_DEV_LOGIN: "true" },
      { HOST: "0.0.0.0", PLATFORM_DEV_LOGIN: "true" },
      { HOST: "0.0.0.0", PLATFORM_DEV_LOGIN: "true", PLATFORM_OIDC_ISSUER: "https://idp.example", PLATFORM_OIDC_CLIENT_ID: "c" },
    ]) {
      const [warning, ...more] = developmentWarnings(loadConfig(env));
      expect(more, JSON.stringify(env)).toEqual([]);
      expect(warning, JSON.stringify(env)).toMatch(/^DEVELOPMENT SIGN-IN IS ON FOR A SERVER OTHERS CAN REACH/);
    }
  });
});

describe("PLATFORM_TRUSTED_IDP_HOSTS", () => {
  it("is empty by default: every organization's provider gets the interstitial page", () => {
    expect(loadConfig({}).trustedIdpHosts).toEqual([]);
    expect(loadConfig({ PLATFORM_TRUSTED_IDP_HOSTS: " , " }).trustedIdpHosts).toEqual([]);
  });

  it("keeps host names as URLs serialise them: lower-case, punycode, IP literals", () => {
    expect(parseTrustedIdpHosts("Login.Example.COM, sso.acme.example,bücher.example,127.0.0.1,[::1],login.example.com")).toEqual([
      "login.example.com",
      "sso.acme.example",
      "xn--bcher-kva.example",
      "127.0.0.1",
      "[::1]",
    ]);
  });

  it("refuses anything but a bare host, naming the entry", () => {
    for (const entry of [
      "https://login.example.com",
      "login.example.com:443",
      "login.example.com/x",
      "*.example.com",
      "user@login.example.com",
      "a b",
      "login\u0000.example.com",
      "[::1",
    ]) {
      let thrown: unknown;
      try {
        loadConfig({ PLATFORM_TRUSTED_IDP_HOSTS: `fine.example.com,${entry}` });
      } catch (e) {
        thrown = e;
      }
      expect(thrown, JSON.stringify(entry)).toBeInstanceOf(ConfigError);
      expect((thrown as Error).message, JSON.stringify(entry)).toContain(`PLATFORM_TRUSTED_IDP_HOSTS: ${JSON.stringify(entry)}`);
    }
  });
});

describe("PLATFORM_SHUTDOWN_TIMEOUT", () => {
  it("defaults to 25 s, below Kubernetes' 30 s grace, and takes a duration", () => {
    expect(loadConfig({}).shutdownTimeoutMs).toBe(25_000);
    expect(loadConfig({ PLATFORM_SHUTDOWN_TIMEOUT: "2s" }).shutdownTimeoutMs).toBe(2000);
    expect(loadConfig({ PLATFORM_SHUTDOWN_TIMEOUT: "1m" }).shutdownTimeoutMs).toBe(60_000);
  });

  it("refuses what is not a duration, under 100 ms or over an hour", () => {
    for (const raw of ["25", "-1s", "abc", "50ms", "2h"]) {
      expect(() => loadConfig({ PLATFORM_SHUTDOWN_TIMEOUT: raw }), raw).toThrow(ConfigError);
    }
  });

  it("refuses the drain setting it replaces, naming the new one", () => {
    expect(() => loadConfig({ PLATFORM_SHUTDOWN_GRACE_MS: "10000" })).toThrow(/PLATFORM_SHUTDOWN_TIMEOUT/);
  });

  it("leaves in-flight requests all of the deadline but a fifth, at most 5 s, for closing", () => {
    expect(drainMs(25_000)).toBe(20_000);
    expect(drainMs(60_000)).toBe(55_000);
    expect(drainMs(2000)).toBe(1600);
  });
});

describe("the registry's settings", () => {
  it("default to 127.0.0.1:5000, storage and files under the data directory, a 90-day key rotation", () => {
    const r = loadConfig({ PLATFORM_DATA_DIR: "/srv/platform" }).registry;
    expect(r).toEqual({
      addr: "127.0.0.1:5000",
      storageDir: "/srv/platform/registry/storage",
      configDir: "/srv/platform/registry",
      notificationsUrl: undefined,
      keyRotationMs: 90 * 86_400_000,
      tokensPerAddress: 600,
    });
  });

  it("can be set", () => {
    const r = loadConfig({
      PLATFORM_REGISTRY_ADDR: "[::1]:5001",
      PLATFORM_REGISTRY_STORAGE: "/var/lib/registry",
      PLATFORM_REGISTRY_NOTIFY_URL: "http://platform.internal:8080/registry/notifications",
      PLATFORM_REGISTRY_KEY_ROTATION: "30d",
      PLATFORM_REGISTRY_TOKENS_PER_ADDRESS: "0",
    }).registry;
    expect(r).toMatchObject({ addr: "[::1]:5001", storageDir: "/var/lib/registry", keyRotationMs: 30 * 86_400_000, tokensPerAddress: 0 });
    expect(r.notificationsUrl).toBe("http://platform.internal:8080/registry/notifications");
    expect(loadConfig({ PLATFORM_REGISTRY_ADDR: ":5000" }).registry.addr).toBe(":5000");
  });

  it("refuses an address that is not host:port, a rotation under an hour or over five years, a URL that is not http(s)", () => {
    for (const addr of ["5000", "localhost", "host:99999", "a b:5000", "x:5000\u0000", "http://x:5000"]) {
      expect(() => loadConfig({ PLATFORM_REGISTRY_ADDR: addr }), addr).toThrow(ConfigError);
    }
    for (const raw of ["30s", "59m", "1826d", "soon"])
      expect(() => loadConfig({ PLATFORM_REGISTRY_KEY_ROTATION: raw }), raw).toThrow(ConfigError);
    expect(() => loadConfig({ PLATFORM_REGISTRY_NOTIFY_URL: "ftp://x/y" })).toThrow(ConfigError);
    expect(() => loadConfig({ PLATFORM_REGISTRY_TOKENS_PER_ADDRESS: "-1" })).toThrow(ConfigError);
  });
});
