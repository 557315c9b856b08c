import type { ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { claimMatchOf } from "../services/iam/claim-match.js";
import { audienceAccepted, loopbackSpellings, MAX_REQUESTED_AUDIENCES, MAX_TOKEN_AUDIENCES, requestedAudience } from "./token-exchange.js";

describe("audienceAccepted", () => {
  const authUrl = "https://auth.example";
  const named = { claimAudience: "", claimAudiencePattern: "urn:deploy:.*" };
  const unnamed = { claimAudience: "", claimAudiencePattern: "" };

  it("accepts a token whose aud list holds the audience, up to 32 values", () => {
    const many = [...Array<string>(MAX_TOKEN_AUDIENCES - 1).fill("urn:other"), "urn:deploy:prod"];
    expect(audienceAccepted(named, many, authUrl)).toBe(true);
    expect(audienceAccepted(unnamed, [...Array<string>(MAX_TOKEN_AUDIENCES - 1).fill("x"), authUrl], authUrl)).toBe(true);
  });

  it("accepts the auth URL in its other loopback spelling, with or without a trailing slash", () => {
    expect(audienceAccepted(unnamed, "http://127.0.0.1:8080/", "http://localhost:8080")).toBe(true);
    expect(audienceAccepted(unnamed, ["http://localhost:8080"], "http://127.0.0.1:8080/")).toBe(true);
    expect(audienceAccepted(unnamed, "http://127.0.0.1:8081", "http://localhost:8080")).toBe(false);
  });

  it("matches a row stored with both audience and audience_pattern by the exact audience alone, as its answer shows", () => {
    // Rows from before the pairs were oneofs may hold both; claimMatchOf answers only `audience`,
    // so the pattern, which nobody can see any longer, must not widen what is accepted.
    const both = { claimAudience: "urn:deploy:prod", claimAudiencePattern: ".*" };
    expect(claimMatchOf({ audience: both.claimAudience, audiencePattern: both.claimAudiencePattern }).aud.case).toBe("audience");
    expect(audienceAccepted(both, "urn:deploy:prod", authUrl)).toBe(true);
    expect(audienceAccepted(both, "urn:anything:else", authUrl)).toBe(false);
    expect(audienceAccepted(both, ["urn:other", "https://another-app.example"], authUrl)).toBe(false);
  });

  it("refuses a token naming more than 32 audiences, even with the right one first", () => {
    const tooMany = ["urn:deploy:prod", ...Array<string>(MAX_TOKEN_AUDIENCES).fill("urn:other")];
    expect(audienceAccepted(named, tooMany, authUrl)).toBe(false);
    expect(audienceAccepted(unnamed, [authUrl, ...Array<string>(MAX_TOKEN_AUDIENCES).fill("x")], authUrl)).toBe(false);
  });
});

describe("loopbackSpellings", () => {
  it("gives a localhost or 127.0.0.1 URL in both spellings, any other as it is", () => {
    expect(loopbackSpellings("http://localhost:8080")).toEqual(["http://localhost:8080", "http://127.0.0.1:8080"]);
    expect(loopbackSpellings("https://127.0.0.1:8443/registry")).toEqual([
      "https://127.0.0.1:8443/registry",
      "https://localhost:8443/registry",
    ]);
    expect(loopbackSpellings("http://localhost")).toEqual(["http://localhost", "http://127.0.0.1"]);
    // Not a host of that name: a longer host, user info, another scheme, IPv6 loopback.
    for (const url of [
      "http://localhost.evil.example:80",
      "http://127.0.0.10:80",
      "http://a@localhost:80",
      "ftp://localhost",
      "http://[::1]:80",
    ]) {
      expect(loopbackSpellings(url), url).toEqual([url]);
    }
  });
});

describe("requestedAudience", () => {
  const accepted = ["http://localhost:8080", "http://localhost:8080/registry"];
  const refusal = (asked: string[]) => {
    try {
      requestedAudience(asked, accepted);
    } catch (e) {
      return (e as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations[0];
    }
    throw new Error("accepted");
  };

  it("maps every spelling asked for to the one accepted audience", () => {
    expect(requestedAudience(["http://127.0.0.1:8080", "http://localhost:8080"], accepted)).toBe("http://localhost:8080");
    expect(requestedAudience(["", "http://127.0.0.1:8080/registry"], accepted)).toBe("http://localhost:8080/registry");
  });

  it("refuses none, too many, one not accepted and two services, naming the value", () => {
    expect(refusal([])).toMatchObject({ field: "aud", description: "is required", reason: "REQUIRED" });
    expect(refusal([""])).toMatchObject({ reason: "REQUIRED" });
    expect(refusal(Array<string>(MAX_REQUESTED_AUDIENCES + 1).fill(accepted[0]!))?.description).toBe("is given 9 times; at most 8");
    expect(refusal([accepted[0]!, "http://localhost:8081"])?.description).toMatch(
      /^"http:\/\/localhost:8081" is not accepted: must be one of /,
    );
    expect(refusal([accepted[0]!, accepted[1]!])?.description).toBe(
      '"http://localhost:8080/registry" names another service than "http://localhost:8080": a token is for one service; exchange once for each',
    );
    expect(refusal(["http://localhost:8080\u0000"])?.field).toBe("aud");
  });
});
