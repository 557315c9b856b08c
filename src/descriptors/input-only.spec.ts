import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { GroupInviteSchema } from "../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { GroupSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentityProviderSchema, ListIdentityProvidersResponseSchema } from "../../gen/platform/iam/v2beta1/identity_providers_pb.js";
import { withoutInputOnly } from "./input-only.js";

describe("withoutInputOnly", () => {
  it("clears INPUT_ONLY fields inside sub-messages and keeps the rest", () => {
    const p = create(IdentityProviderSchema, {
      uid: "g/1",
      name: "n",
      oidc: { issuer: "https://i", clientId: "c", clientSecret: "s", additionalScopes: ["email"] },
    });
    const out = withoutInputOnly(IdentityProviderSchema, p);
    expect(out.oidc?.clientSecret).toBeUndefined();
    expect(out.oidc).toMatchObject({ issuer: "https://i", clientId: "c", additionalScopes: ["email"] });
    expect(out.name).toBe("n");
  });

  it("clears top-level INPUT_ONLY message fields", () => {
    const i = create(GroupInviteSchema, { roleUid: "viewer", ttl: { seconds: 60n }, code: "kept: output only" });
    const out = withoutInputOnly(GroupInviteSchema, i);
    expect(out.ttl).toBeUndefined();
    expect(out.code).toBe("kept: output only");
  });

  it("leaves a message without sub-messages set alone", () => {
    const p = create(IdentityProviderSchema, { name: "n" });
    expect(withoutInputOnly(IdentityProviderSchema, p)).toEqual(create(IdentityProviderSchema, { name: "n" }));
  });

  it("clears them in every element of a list (a List response)", () => {
    const page = create(ListIdentityProvidersResponseSchema, {
      identityProviders: [1, 2, 3].map((n) => ({
        uid: `g/${n}`,
        name: `p${n}`,
        oidc: { issuer: "https://i", clientId: "c", clientSecret: `secret ${n}` },
      })),
    });
    const out = withoutInputOnly(ListIdentityProvidersResponseSchema, page);
    expect(out.identityProviders.map((p) => p.oidc?.clientSecret ?? "")).toEqual(["", "", ""]);
    expect(out.identityProviders.map((p) => p.name)).toEqual(["p1", "p2", "p3"]);
  });

  it("leaves a type that cannot hold one untouched (the same object, nothing walked)", () => {
    const g = create(GroupSchema, { uid: "a", name: "n", description: "d" });
    expect(withoutInputOnly(GroupSchema, g)).toBe(g);
    expect(g).toEqual(create(GroupSchema, { uid: "a", name: "n", description: "d" }));
  });
});
