import { describe, expect, it } from "vitest";
import { CliError, EXIT } from "./errors.js";
import { MAX_REGISTRY_HOST_BYTES, parseRegistryHost, registryHostProblem, serverUrlHost } from "./registry-host.js";

describe("registry hosts", () => {
  it("accepts names, IPv4 and bracketed IPv6 addresses, each with or without a port, and lower-cases them", () => {
    for (const host of [
      "localhost",
      "localhost:5000",
      "registry.example.com",
      "reg-1.example.com:443",
      "127.0.0.1:5000",
      "[::1]:5000",
      "[fe80::1]",
      "a:1",
      "a:65535",
    ]) {
      expect(registryHostProblem(host), host).toBeUndefined();
    }
    expect(parseRegistryHost("Registry.Example.COM:5000", "--registry")).toBe("registry.example.com:5000");
  });

  it("refuses a scheme, a path, NUL, spaces, odd characters, bad ports and labels, naming the flag", () => {
    const bad: [string, RegExp][] = [
      ["https://localhost:5000", /without a scheme/],
      ["localhost:5000/v2", /without a path/],
      ["local\0host", /not a host name/],
      ["local host", /not a host name/],
      [" localhost", /not a host name/],
      ["localhost:5000\n", /not a host name/],
      ["", /not a host name/],
      ["user@localhost", /not a host name/],
      ["-leading.example", /not a host name/],
      ["trailing-.example", /not a host name/],
      ["a..b", /not a host name/],
      ["host_name", /not a host name/],
      ["localhost:", /not a host name/],
      ["localhost:0", /port 0 is not between 1 and 65535/],
      ["localhost:65536", /port 65536 is not between/],
      ["localhost:123456", /not a host name/],
      ["[1::2::3]:5000", /not an IPv6 address/],
      ["[::g]:5000", /not a host name/],
      ["::1", /not a host name/],
      ["bücher.example", /not a host name/],
      [`${"a".repeat(64)}.example`, /not a host name/],
    ];
    for (const [host, why] of bad) {
      expect(registryHostProblem(host), JSON.stringify(host)).toMatch(why);
      expect(() => parseRegistryHost(host, "--registry"), JSON.stringify(host)).toThrow(CliError);
    }
    try {
      parseRegistryHost("a b", "--registry");
    } catch (e) {
      expect((e as CliError).message).toBe('--registry: "a b": not a host name or [IPv6 address] with an optional :port');
      expect((e as CliError).exitCode).toBe(EXIT.usage);
    }
  });

  it(`refuses more than ${MAX_REGISTRY_HOST_BYTES} bytes, and clips the name in the message`, () => {
    const label = "a".repeat(63);
    const fits = [label, label, label, "a".repeat(MAX_REGISTRY_HOST_BYTES - 3 * 64)].join(".");
    expect(fits).toHaveLength(MAX_REGISTRY_HOST_BYTES);
    expect(registryHostProblem(fits)).toBeUndefined();
    expect(registryHostProblem(`${fits}a`)).toBe(`longer than ${MAX_REGISTRY_HOST_BYTES} bytes`);
    expect(() => parseRegistryHost("x".repeat(100_000), "--registry")).toThrow(/^--registry: "x{80}…": longer than 255 bytes$/);
  });

  it("takes the host out of the server URL docker sends: a host, or a URL with a scheme and path", () => {
    expect(serverUrlHost("localhost:5000")).toBe("localhost:5000");
    expect(serverUrlHost("localhost:5000\n")).toBe("localhost:5000");
    expect(serverUrlHost("https://index.docker.io/v1/")).toBe("index.docker.io");
    expect(serverUrlHost("HTTP://LocalHost:5000/v2/")).toBe("localhost:5000");
    expect(serverUrlHost("[::1]:5000")).toBe("[::1]:5000");
    expect(() => serverUrlHost("ftp://localhost:5000")).toThrow(/server URL: .*without a scheme/);
    expect(() => serverUrlHost("")).toThrow(/server URL: "": not a host name/);
    expect(() => serverUrlHost("local\0host")).toThrow(/not a host name/);
    expect(() => serverUrlHost("localhost:5000/v2/")).toThrow(/without a path/);
    expect(() => serverUrlHost("https:///v2/")).toThrow(/server URL: "": not a host name/);
  });
});
