import { describe, expect, it } from "vitest";
import { EgressError } from "./egress-error.js";
import { checkUrl } from "./url-policy.js";

const strict = { allowInsecure: false };
const development = { allowInsecure: true };

function refusal(url: string, opts: { allowInsecure: boolean }): string | undefined {
  try {
    checkUrl(url, opts);
    return undefined;
  } catch (e) {
    expect(e).toBeInstanceOf(EgressError);
    expect((e as EgressError).failure).toBe("url");
    return (e as EgressError).message;
  }
}

describe("checkUrl", () => {
  it("allows https host names and public literals in both modes", () => {
    for (const opts of [strict, development]) {
      expect(checkUrl("https://issuer.example.com/a", opts)).toMatchObject({ host: "issuer.example.com", literal: false });
      expect(checkUrl("https://93.184.216.34/", opts)).toMatchObject({ host: "93.184.216.34", literal: true });
      expect(checkUrl("https://[2606:4700::1]:8443/", opts)).toMatchObject({ host: "2606:4700::1", literal: true });
    }
  });

  it("refuses other schemes, and http unless in development", () => {
    for (const url of ["ftp://issuer.example.com/", "file:///etc/passwd", "data:text/plain,x", "ws://issuer.example.com/"]) {
      expect(refusal(url, strict), url).toBeDefined();
      expect(refusal(url, development), url).toBeDefined();
    }
    expect(refusal("http://issuer.example.com/", strict)).toContain("only https");
    expect(refusal("http://issuer.example.com/", development)).toBeUndefined();
    expect(refusal("not a url", development)).toContain("not an absolute URL");
  });

  it("refuses credentials in the URL", () => {
    expect(refusal("https://user:pw@issuer.example.com/", strict)).toContain("credentials");
    expect(refusal("https://user@issuer.example.com/", development)).toContain("credentials");
  });

  it("judges IP literals without DNS, in every notation WHATWG URL normalises", () => {
    const refused: [string, string][] = [
      ["https://10.0.0.1/", "10.0.0.1"],
      ["https://169.254.169.254/latest/meta-data/", "169.254.169.254"],
      ["https://167772161/", "10.0.0.1"], // decimal
      ["https://012.0.0.1/", "10.0.0.1"], // octal
      ["https://0xa9.0xfe.0xa9.0xfe/", "169.254.169.254"], // hex
      ["https://[::ffff:10.0.0.1]/", "::ffff:a00:1"],
      ["https://[fe80::1]/", "fe80::1"],
      ["https://[fc00::1]/", "fc00::1"],
      ["https://[2001:db8::1]/", "2001:db8::1"],
      ["https://100.64.0.1/", "100.64.0.1"],
      ["https://0.0.0.0/", "0.0.0.0"],
      ["https://[::]/", "::"],
    ];
    for (const [url, shown] of refused) {
      expect(refusal(url, strict), url).toContain(`${shown} is not a public address`);
      expect(refusal(url, development), url).toContain(`${shown} is not a public address`);
    }
  });

  it("allows loopback literals (and http) only with the development flag", () => {
    for (const url of [
      "https://127.0.0.1:8443/",
      "http://127.0.0.1:8080/",
      "http://[::1]:8080/",
      "http://2130706433/",
      "http://[::ffff:127.0.0.1]/",
    ]) {
      expect(refusal(url, strict), url).toBeDefined();
      expect(refusal(url, development), url).toBeUndefined();
    }
  });
});
