import { toJsonString } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { IdentityProviderSchema, IdentityProvidersService } from "../../gen/platform/iam/v2beta1/identity_providers_pb.js";
import { SecretBox } from "../../src/crypto/index.js";
import { schema } from "../../src/db/index.js";
import { clientSecretContext } from "../../src/db/client-secrets.js";
import { connectClient, grpcStatusDetails, type JsonObject, type RestClient } from "../support/clients.js";
import { connectFailure } from "../support/connect-failure.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { createGroup, createRole, expectInvalid, expectPrecondition, ok, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

const BASE = "/iam/v2beta1/identityProviders";
const ISSUER = "https://accounts.example.com";

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const group = async (name: string, parent?: string) => uidOf(await createGroup(call, name, parent));
const customRole = async (groupUid: string, name: string) => uidOf(await createRole(call, groupUid, { name, capabilities: ["repo.list"] }));
const createProvider = (groupUid: string, body: JsonObject) => ok(call("POST", `${BASE}/${groupUid}`, body));

/** The provider's client secret as the database holds it: sealed (never plain), opened here. */
async function storedSecret(uid: string): Promise<string | undefined> {
  const t = schema.identityProviders;
  const [row] = await server.app.database.db.select({ secret: t.oidcClientSecret }).from(t).where(eq(t.uid, uid));
  if (!row?.secret) return row?.secret;
  expect(SecretBox.isSealed(row.secret)).toBe(true);
  return server.app.secrets.open(row.secret, clientSecretContext(uid));
}

const oidc = (extra: JsonObject = {}): JsonObject => ({ issuer: ISSUER, clientId: "platform", ...extra });

describe("identity providers over REST", () => {
  it("creates a provider and never returns its client secret", async () => {
    const g = await group("idp-org");
    const secret = "s3cr3t-create-rest";
    const p = await createProvider(g, {
      name: "corporate sso",
      description: "d",
      defaultRole: "viewer",
      oidc: oidc({ clientSecret: secret, additionalScopes: ["email", "profile"] }),
    });
    expect(p["uid"]).toMatch(new RegExp(`^${g}/[0-9a-f]{16}$`));
    expect(p).toMatchObject({ name: "corporate sso", description: "d", defaultRole: "viewer" });
    expect(p["oidc"]).toEqual({ issuer: ISSUER, clientId: "platform", additionalScopes: ["email", "profile"] });
    expect(p["createTime"]).toBe(p["updateTime"]);
    expect(await storedSecret(p["uid"] as string)).toBe(secret);

    const got = await call("GET", `${BASE}/${p["uid"]}`);
    expect(got.body).toEqual(p);
    const list = await call("GET", `${BASE}?uidp.children_of=${g}`);
    expect(list.body["identityProviders"]).toEqual([p]);
    for (const body of [got.body, list.body]) {
      expect(JSON.stringify(body)).not.toContain(secret);
      expect(JSON.stringify(body)).not.toContain("clientSecret");
    }
  });

  it("keeps the secret on an update that does not name it, and never returns it", async () => {
    const g = await group("idp-keep");
    const secret = "keep-me-secret";
    const p = await createProvider(g, { name: "keep", oidc: oidc({ clientSecret: secret }) });
    const uid = p["uid"] as string;

    const renamed = await call("PATCH", `${BASE}/${uid}`, { name: "kept", oidc: { additionalScopes: ["email"] } });
    expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
    expect(renamed.body["oidc"]).toEqual({ issuer: ISSUER, clientId: "platform", additionalScopes: ["email"] });
    expect(await storedSecret(uid)).toBe(secret);

    const masked = await call("PATCH", `${BASE}/${uid}?updateMask=description`, { description: "x", oidc: { clientSecret: "ignored" } });
    expect(masked.status).toBe(200);
    expect(await storedSecret(uid)).toBe(secret);

    const replaced = await call("PATCH", `${BASE}/${uid}`, { oidc: { clientSecret: "rotated-secret" } });
    expect(replaced.status).toBe(200);
    expect(JSON.stringify(replaced.body)).not.toContain("rotated-secret");
    expect(JSON.stringify(replaced.body)).not.toContain("clientSecret");
    expect(await storedSecret(uid)).toBe("rotated-secret");
  });

  it("clears the secret when the issuer or client id changes, unless the same request gives a new one", async () => {
    const g = await group("idp-retarget");
    const p = await createProvider(g, { name: "retarget", oidc: oidc({ clientSecret: "for-the-old-issuer" }) });
    const uid = p["uid"] as string;
    // Pointing the provider at another issuer must not hand it the old issuer's secret.
    await ok(call("PATCH", `${BASE}/${uid}`, { oidc: { issuer: "https://attacker.example" } }));
    expect(await storedSecret(uid)).toBe("");
    await ok(call("PATCH", `${BASE}/${uid}`, { oidc: { issuer: ISSUER, clientSecret: "for-the-new-issuer" } }));
    expect(await storedSecret(uid)).toBe("for-the-new-issuer");
    await ok(call("PATCH", `${BASE}/${uid}?updateMask=oidc.client_id`, { oidc: { clientId: "another-client" } }));
    expect(await storedSecret(uid)).toBe("");
    await ok(
      call("PATCH", `${BASE}/${uid}?updateMask=oidc.client_id,oidc.client_secret`, { oidc: { clientId: "third", clientSecret: "s3" } }),
    );
    expect(await storedSecret(uid)).toBe("s3");
  });

  it("clears the secret when updateMask names it with an empty value", async () => {
    const g = await group("idp-clear");
    const p = await createProvider(g, { name: "clear", oidc: oidc({ clientSecret: "to-be-cleared" }) });
    const uid = p["uid"] as string;
    const viaMask = await call("PATCH", `${BASE}/${uid}?updateMask=oidc.client_secret`, {});
    expect(viaMask.status, JSON.stringify(viaMask.body)).toBe(200);
    expect(await storedSecret(uid)).toBe("");

    await call("PATCH", `${BASE}/${uid}`, { oidc: { clientSecret: "again" } });
    expect(await storedSecret(uid)).toBe("again");
    // The implicit mask of a body that holds an empty secret names it too.
    const viaBody = await call("PATCH", `${BASE}/${uid}`, { oidc: { clientSecret: "" } });
    expect(viaBody.status).toBe(200);
    expect(await storedSecret(uid)).toBe("");
  });

  it.each([["http://localhost:8080/realms/dev"], ["http://127.0.0.1:9000"], ["https://login.example.com/tenant/v2.0"]])(
    "accepts the issuer %s",
    async (issuer) => {
      const g = await group("idp-issuer-ok");
      const p = await createProvider(g, { name: "ok", oidc: { issuer, clientId: "c" } });
      expect((p["oidc"] as JsonObject)["issuer"]).toBe(issuer);
    },
  );

  it.each<[string, JsonObject, string]>([
    ["a missing name", { oidc: oidc() }, "name"],
    ["a missing oidc", { name: "n" }, "oidc"],
    ["a missing issuer", { name: "n", oidc: { clientId: "c" } }, "oidc.issuer"],
    ["an http issuer on another host", { name: "n", oidc: oidc({ issuer: "http://accounts.example.com" }) }, "oidc.issuer"],
    ["an issuer that is no URL", { name: "n", oidc: oidc({ issuer: "accounts.example.com" }) }, "oidc.issuer"],
    ["a non-http issuer", { name: "n", oidc: oidc({ issuer: "ftp://accounts.example.com" }) }, "oidc.issuer"],
    ["an issuer with a query", { name: "n", oidc: oidc({ issuer: "https://accounts.example.com/?a=b" }) }, "oidc.issuer"],
    ["an issuer with credentials", { name: "n", oidc: oidc({ issuer: "https://u:p@accounts.example.com" }) }, "oidc.issuer"],
    ["a missing client id", { name: "n", oidc: { issuer: ISSUER } }, "oidc.client_id"],
    ["a scope with a space", { name: "n", oidc: oidc({ additionalScopes: ["email", "a b"] }) }, "oidc.additional_scopes[1]"],
    ["an empty scope", { name: "n", oidc: oidc({ additionalScopes: [""] }) }, "oidc.additional_scopes[0]"],
    ["an unknown default role", { name: "n", defaultRole: "no-such-role", oidc: oidc() }, "default_role"],
  ])("rejects %s with INVALID_ARGUMENT naming the field", async (_label, body, field) => {
    const g = await group("idp-invalid");
    expectInvalid(await call("POST", `${BASE}/${g}`, body), field);
    const list = await call("GET", `${BASE}?uidp.children_of=${g}`);
    expect(list.body["totalCount"]).toBe("0");
  });

  it("takes a default role only when it is visible from the group", async () => {
    const root = await group("idp-roles");
    const team = await group("team", root);
    const sibling = await group("sibling", root);
    const rootRole = await customRole(root, "org-reader");
    const siblingRole = await customRole(sibling, "sibling-reader");

    const inherited = await createProvider(team, { name: "inherited", defaultRole: rootRole, oidc: oidc() });
    expect(inherited["defaultRole"]).toBe(rootRole);

    expectInvalid(await call("POST", `${BASE}/${team}`, { name: "foreign", defaultRole: siblingRole, oidc: oidc() }), "default_role");
    expectInvalid(await call("PATCH", `${BASE}/${inherited["uid"]}`, { defaultRole: siblingRole }), "default_role");
    expect((await call("GET", `${BASE}/${inherited["uid"]}`)).body["defaultRole"]).toBe(rootRole);

    // A role some provider defaults to cannot be deleted; once unset, it can.
    expectPrecondition(await call("DELETE", `/iam/v2beta1/roles/${rootRole}`), "RESOURCE_IN_USE");
    const unset = await call("PATCH", `${BASE}/${inherited["uid"]}`, { defaultRole: "" });
    expect(unset.body["defaultRole"]).toBe("");
    expect((await call("DELETE", `/iam/v2beta1/roles/${rootRole}`)).status).toBe(200);
  });

  it("refuses a second provider with the same name in a group (409)", async () => {
    const g = await group("idp-dup");
    await createProvider(g, { name: "same", oidc: oidc() });
    const dup = await call("POST", `${BASE}/${g}`, { name: "same", oidc: oidc() });
    expect(dup.status).toBe(409);
    expect(dup.body["code"]).toBe(6);
    const other = await group("idp-dup-other");
    await createProvider(other, { name: "same", oidc: oidc() });
  });

  it("is NOT_FOUND for a group that does not exist", async () => {
    const res = await call("POST", `${BASE}/${"0".repeat(40)}`, { name: "n", oidc: oidc() });
    expect(res.status).toBe(404);
    expect((await call("GET", `${BASE}/${"0".repeat(40)}/0123456789abcdef`)).status).toBe(404);
  });

  it("lists by scope and name, in order", async () => {
    const root = await group("idp-list");
    const child = await group("child", root);
    for (const name of ["b", "a"]) await createProvider(root, { name, oidc: oidc() });
    await createProvider(child, { name: "c", oidc: oidc() });
    const names = async (query: string) =>
      ((await call("GET", `${BASE}?${query}`)).body["identityProviders"] as JsonObject[]).map((p) => p["name"]);
    expect(await names(`uidp.descendants_of=${root}&order_by=name`)).toEqual(["a", "b", "c"]);
    expect(await names(`uidp.children_of=${root}&order_by=name%20desc`)).toEqual(["b", "a"]);
    expect(await names(`uidp.descendants_of=${root}&name=c`)).toEqual(["c"]);
  });

  it("keeps a group with a provider from being deleted (RESOURCE_NOT_EMPTY)", async () => {
    const g = await group("idp-holder");
    const p = await createProvider(g, { name: "p", oidc: oidc() });
    expect(expectPrecondition(await call("DELETE", `/iam/v2beta1/groups/${g}`), "RESOURCE_NOT_EMPTY")).toMatch(/identity providers/);
    expect((await call("DELETE", `${BASE}/${p["uid"]}`)).status).toBe(200);
    expect((await call("GET", `${BASE}/${p["uid"]}`)).status).toBe(404);
    expect((await call("DELETE", `/iam/v2beta1/groups/${g}`)).status).toBe(200);
  });
});

describe("identity providers over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(
    () => server,
    "platform.iam.v2beta1.IdentityProvidersService",
    "platform/iam/v2beta1/identity_providers.proto",
  );

  it("never returns the secret: create, get, list, update", async () => {
    const g = await group("idp-grpc");
    const secret = "grpc-secret-value";
    const created = await rpc<JsonObject>("CreateIdentityProvider", {
      parent: g,
      identity_provider: { name: "grpc", oidc: { issuer: ISSUER, client_id: "cid", client_secret: secret } },
    });
    const uid = created["uid"] as string;
    expect((created["oidc"] as JsonObject)["client_id"]).toBe("cid");
    expect(await storedSecret(uid)).toBe(secret);
    // Without a mask gRPC changes the non-default fields: the secret stays.
    const updated = await rpc<JsonObject>("UpdateIdentityProvider", { identity_provider: { uid, description: "new" } });
    expect(updated["description"]).toBe("new");
    expect(await storedSecret(uid)).toBe(secret);
    const got = await rpc<JsonObject>("GetIdentityProvider", { uid });
    const list = await rpc<JsonObject>("ListIdentityProviders", { uidp: { children_of: g } });
    expect((list["identity_providers"] as JsonObject[]).map((p) => p["uid"])).toEqual([uid]);
    for (const res of [created, updated, got, list]) {
      expect(JSON.stringify(res)).not.toContain(secret);
      expect(JSON.stringify(res)).not.toContain("client_secret");
    }

    const cleared = await rpc<JsonObject>("UpdateIdentityProvider", {
      identity_provider: { uid, oidc: {} },
      update_mask: { paths: ["oidc.client_secret"] },
    });
    expect((cleared["oidc"] as JsonObject)["issuer"]).toBe(ISSUER);
    expect(await storedSecret(uid)).toBe("");
  });

  it("types its errors", async () => {
    const g = await group("idp-grpc-bad");
    const err = await failure(
      rpc("CreateIdentityProvider", {
        parent: g,
        identity_provider: { name: "n", oidc: { issuer: "http://evil.example", client_id: "c" } },
      }),
    );
    expect(err.code).toBe(3);
    const status = grpcStatusDetails(err);
    const badRequest = status.details.find((d) => d.type === "google.rpc.BadRequest")?.value as { fieldViolations: { field: string }[] };
    expect(badRequest.fieldViolations[0]?.field).toBe("oidc.issuer");
  });
});

describe("identity providers over Connect", () => {
  it("never returns the secret: create, get, list, update", async () => {
    const client = connectClient(IdentityProvidersService, server.url, server.token);
    const g = await group("idp-connect");
    const secret = "connect-secret-value";
    const created = await client.createIdentityProvider({
      parent: g,
      identityProvider: { name: "connect", oidc: { issuer: ISSUER, clientId: "cid", clientSecret: secret } },
    });
    const updated = await client.updateIdentityProvider({
      identityProvider: { uid: created.uid, name: "renamed", oidc: { issuer: ISSUER, clientId: "cid2" } },
      updateMask: { paths: ["name", "oidc.client_id"] },
    });
    expect(updated.name).toBe("renamed");
    expect(updated.oidc?.clientId).toBe("cid2");
    // A new client id without a new secret: the old client's secret is cleared.
    expect(await storedSecret(created.uid)).toBe("");
    const got = await client.getIdentityProvider({ uid: created.uid });
    const list = await client.listIdentityProviders({ uidp: { childrenOf: g } });
    expect(list.identityProviders.map((p) => p.uid)).toEqual([created.uid]);
    for (const p of [created, updated, got, ...list.identityProviders]) {
      expect(p.oidc?.clientSecret).toBeUndefined();
      expect(toJsonString(IdentityProviderSchema, p)).not.toContain(secret);
    }

    const err = await connectFailure(
      client.createIdentityProvider({ parent: g, identityProvider: { name: "x", oidc: { issuer: ISSUER } } }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("oidc.client_id");
  });
});
