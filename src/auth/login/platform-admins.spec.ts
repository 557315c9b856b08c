import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/config.js";
import { PlatformAdmins } from "./platform-admins.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

const ISSUER = "https://sso.example.com/realms/acme";
const GLOBAL: SignInVia = { kind: "global" };
const fail = (message: string) => new ConfigError(message);
const parse = (raw: string, issuer: string | undefined = ISSUER) => PlatformAdmins.parse(raw, issuer, fail);

const person = (over: Partial<SignedInPerson> = {}): SignedInPerson => ({
  issuer: ISSUER,
  subject: "8c1f2a",
  email: "ada@example.com",
  emailVerified: true,
  name: "ada@example.com",
  ...over,
});

describe("PLATFORM_ADMINS syntax", () => {
  it("takes issuer|subject and email:<address> entries, separated by commas", () => {
    const admins = parse(`${ISSUER}|8c1f2a, email:Grace@Example.com ,${ISSUER}/|sub|with|bars`);
    expect(admins.size).toBe(3);
    expect(admins.includes(person(), GLOBAL)).toBe(true);
    expect(admins.includes(person({ subject: "sub|with|bars", email: "" }), GLOBAL)).toBe(true);
    expect(admins.includes(person({ subject: "other", email: "grace@example.COM" }), GLOBAL)).toBe(true);
  });

  it("unset or blank names nobody", () => {
    expect(parse("").size).toBe(0);
    expect(PlatformAdmins.parse(undefined, undefined, fail).size).toBe(0);
    expect(parse("  ", undefined).size).toBe(0);
  });

  it.each([
    ["an entry without | or email:", "ada@example.com", /must be <issuer>\|<subject> or email:<address>/],
    ["an empty entry", `${ISSUER}|a,,email:b@example.com`, /entry 2 is empty/],
    ["a bad e-mail", "email:not-an-address", /is not email:<address>/],
    ["another issuer", "https://evil.example|ada", /administrators are people of PLATFORM_OIDC_ISSUER/],
    ["an empty subject", `${ISSUER}|`, /needs a subject/],
    ["a subject over 255 characters", `${ISSUER}|${"s".repeat(256)}`, /needs a subject/],
    ["a control character", `${ISSUER}|a\u0000b`, /control character/],
  ])("refuses %s with a ConfigError", (_label, raw, message) => {
    expect(() => parse(raw)).toThrow(ConfigError);
    expect(() => parse(raw)).toThrow(message);
  });

  it("needs the upstream provider (PLATFORM_OIDC_ISSUER)", () => {
    expect(() => loadConfig({ PLATFORM_ADMINS: "email:ada@example.com" })).toThrow(/PLATFORM_ADMINS needs PLATFORM_OIDC_ISSUER/);
    const config = loadConfig({ PLATFORM_OIDC_ISSUER: ISSUER, PLATFORM_OIDC_CLIENT_ID: "platform", PLATFORM_ADMINS: `${ISSUER}|8c1f2a` });
    expect(config.platformAdmins.includes(person(), GLOBAL)).toBe(true);
  });
});

describe("who counts", () => {
  const admins = parse(`${ISSUER}|8c1f2a,email:grace@example.com`);

  it("only a verified e-mail", () => {
    const grace = person({ subject: "g", email: "grace@example.com" });
    expect(admins.includes(grace, GLOBAL)).toBe(true);
    expect(admins.includes({ ...grace, emailVerified: false }, GLOBAL)).toBe(false);
  });

  it("only people signed in through the global upstream, with its issuer", () => {
    const idp = { uid: `${"a".repeat(40)}/${"b".repeat(16)}`, groupUid: "a".repeat(40), defaultRoleUid: "" };
    expect(admins.includes(person(), { kind: "organization", idp })).toBe(false);
    expect(admins.includes(person(), { kind: "development" })).toBe(false);
    expect(admins.includes(person({ issuer: "https://other.example" }), GLOBAL)).toBe(false);
    expect(admins.includes(person({ subject: "8C1F2A", email: "" }), GLOBAL)).toBe(false);
  });
});
