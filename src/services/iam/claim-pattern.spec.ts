import { describe, expect, it } from "vitest";
import { issuerPatternOrigin } from "./claim-pattern.js";

describe("issuerPatternOrigin: an issuer pattern must fix scheme, host and port", () => {
  it("accepts a literal origin followed by / and anything, or a pattern that is wholly literal", () => {
    const accepted: [string, string][] = [
      ["https://token\\.actions\\.githubusercontent\\.com/.*", "https://token.actions.githubusercontent.com"],
      ["https://token\\.actions\\.githubusercontent\\.com", "https://token.actions.githubusercontent.com"],
      ["^https://gitlab\\.example\\.com/[a-z-]+", "https://gitlab.example.com"],
      ["https://idp\\.example\\.com:8443/tenants/[0-9a-f]{8}", "https://idp.example.com:8443"],
      ["http://127\\.0\\.0\\.1:4000/.*", "http://127.0.0.1:4000"],
      ["https://x\\.example\\.com/a|https://x\\.example\\.com/b", "https://x.example.com"],
    ];
    for (const [pattern, origin] of accepted) expect(issuerPatternOrigin(pattern), pattern).toBe(origin);
  });

  it("refuses a pattern that leaves the scheme, host or port open", () => {
    for (const pattern of [
      "https://.*",
      ".*",
      "https?://x\\.example\\.com/.*",
      "https://[a-z]+\\.example\\.com/.*",
      "https://a+\\.example\\.com/",
      "https://x\\.example\\.com.*",
      "https://x\\.example\\.com(/.*)?",
      "https://x\\.example\\.com:\\d+/.*",
      "https://x\\.example\\.com/a|https://.*",
      "(?i)https://x\\.example\\.com/.*",
      "https://user@x\\.example\\.com/.*",
      "ftp://x\\.example\\.com/.*",
      "(a+)+",
      "[",
    ]) {
      expect(issuerPatternOrigin(pattern), pattern).toBeUndefined();
    }
  });
});
