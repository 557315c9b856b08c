import { describe, expect, it } from "vitest";
import { inviteEmailSatisfied } from "./invite-email.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

const ORG = "a".repeat(40);
const OTHER_ORG = "b".repeat(40);
const TEAM = `${ORG}/0123456789abcdef`;

const person = (email: string, emailVerified = true): SignedInPerson => ({
  issuer: "https://idp.example",
  subject: "s",
  email,
  emailVerified,
  name: email,
});
const orgIdp = (groupUid: string): SignInVia => ({
  kind: "organization",
  idp: { uid: `${groupUid}/fedcba9876543210`, groupUid, defaultRoleUid: null },
});
const GLOBAL: SignInVia = { kind: "global" };
const DEV: SignInVia = { kind: "development" };

describe("inviteEmailSatisfied", () => {
  const invite = { email: "Erin@Example.com", parentUid: TEAM };

  it("an invite without an email restriction is satisfied by any sign-in", () => {
    for (const via of [GLOBAL, DEV, orgIdp(OTHER_ORG)])
      expect(inviteEmailSatisfied({ email: "", parentUid: TEAM }, person("", false), via)).toBe(true);
  });

  it("trusts the verified email (any case) from the deployment's upstream", () => {
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), GLOBAL)).toBe(true);
  });

  it("trusts an IdentityProvider of the invite's group or of a group above it", () => {
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), orgIdp(ORG))).toBe(true);
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), orgIdp(TEAM))).toBe(true);
    expect(inviteEmailSatisfied({ ...invite, parentUid: `${TEAM}/2222222222222222` }, person("erin@example.com"), orgIdp(TEAM))).toBe(true);
  });

  it("does not trust an IdentityProvider below the invite's group, nor one of a sibling group", () => {
    // A subgroup's owner may configure a provider that asserts any email: an invite at the organization must not believe it.
    expect(inviteEmailSatisfied({ ...invite, parentUid: ORG }, person("erin@example.com"), orgIdp(`${ORG}/1111111111111111`))).toBe(false);
    expect(inviteEmailSatisfied({ ...invite, parentUid: ORG }, person("erin@example.com"), orgIdp(TEAM))).toBe(false);
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), orgIdp(`${ORG}/1111111111111111`))).toBe(false);
    // A uid that only starts like the invite's group is not above it.
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), orgIdp(`${TEAM}0`))).toBe(false);
  });

  it("does not trust another organization's IdentityProvider, even one whose uid starts like it", () => {
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), orgIdp(OTHER_ORG))).toBe(false);
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), orgIdp(`${OTHER_ORG}/0123456789abcdef`))).toBe(false);
    expect(inviteEmailSatisfied({ ...invite, parentUid: "abc/0123456789abcdef" }, person("erin@example.com"), orgIdp("abcd"))).toBe(false);
  });

  it("never trusts the development provider", () => {
    expect(inviteEmailSatisfied(invite, person("erin@example.com"), DEV)).toBe(false);
  });

  it("needs the same, verified address", () => {
    expect(inviteEmailSatisfied(invite, person("erin@example.com", false), GLOBAL)).toBe(false);
    expect(inviteEmailSatisfied(invite, person("mallory@example.com"), GLOBAL)).toBe(false);
    expect(inviteEmailSatisfied(invite, person(""), GLOBAL)).toBe(false);
  });
});
