import { describe, expect, it } from "vitest";
import { ConnectError } from "@connectrpc/connect";
import { CreateIdentityRequestSchema, IdentitySchema } from "../../gen/platform/iam/v2beta1/identities_pb.js";
import { FieldLookup } from "./field-lookup.js";
import { dropUnusedOneofMembers } from "./oneof-members.js";

const lookup = new FieldLookup();

describe("dropUnusedOneofMembers", () => {
  it("drops a oneof's empty members next to the one in use, at any depth, by JSON or proto name", () => {
    const body = { identity: { name: "n", claimMatch: { issuer: "x", issuer_pattern: "", subject: null, subjectPattern: "s.*" } } };
    expect(dropUnusedOneofMembers(CreateIdentityRequestSchema, body, "", lookup)).toEqual({
      identity: { name: "n", claimMatch: { issuer: "x", subjectPattern: "s.*" } },
    });
    // The caller's object is not changed.
    expect(body.identity.claimMatch).toHaveProperty("issuer_pattern", "");
  });

  it("drops every member of a oneof given only empty ones, and keeps a lone empty member", () => {
    expect(dropUnusedOneofMembers(IdentitySchema, { claimMatch: { audience: "", audiencePattern: "" } }, "", lookup)).toEqual({
      claimMatch: {},
    });
    const lone = { claimMatch: { audience: "" } };
    expect(dropUnusedOneofMembers(IdentitySchema, lone, "", lookup)).toBe(lone);
  });

  it("refuses two members with values, naming the second as written", () => {
    let err: unknown;
    try {
      dropUnusedOneofMembers(IdentitySchema, { claimMatch: { issuer: "a", issuerPattern: "b" } }, "identity", lookup);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).rawMessage).toContain("identity.claimMatch.issuerPattern");
  });

  it("leaves what is not a message body to the decoder", () => {
    expect(dropUnusedOneofMembers(IdentitySchema, "text", "", lookup)).toBe("text");
    const unknown = { nope: 1, claimMatch: [] };
    expect(dropUnusedOneofMembers(IdentitySchema, unknown, "", lookup)).toBe(unknown);
  });
});
