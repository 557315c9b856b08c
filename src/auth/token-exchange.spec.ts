import { describe, expect, it } from "vitest";
import { audienceAccepted, MAX_TOKEN_AUDIENCES } from "./token-exchange.js";

describe("audienceAccepted", () => {
  const authUrl = "https://auth.example";
  const named = { claimAudience: "", claimAudiencePattern: "urn:deploy:.*" };
  const unnamed = { claimAudience: "", claimAudiencePattern: "" };

  it("accepts a token whose aud list holds the audience, up to 32 values", () => {
    const many = [...Array<string>(MAX_TOKEN_AUDIENCES - 1).fill("urn:other"), "urn:deploy:prod"];
    expect(audienceAccepted(named, many, authUrl)).toBe(true);
    expect(audienceAccepted(unnamed, [...Array<string>(MAX_TOKEN_AUDIENCES - 1).fill("x"), authUrl], authUrl)).toBe(true);
  });

  it("refuses a token naming more than 32 audiences, even with the right one first", () => {
    const tooMany = ["urn:deploy:prod", ...Array<string>(MAX_TOKEN_AUDIENCES).fill("urn:other")];
    expect(audienceAccepted(named, tooMany, authUrl)).toBe(false);
    expect(audienceAccepted(unnamed, [authUrl, ...Array<string>(MAX_TOKEN_AUDIENCES).fill("x")], authUrl)).toBe(false);
  });
});
