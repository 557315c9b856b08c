import { beforeAll, describe, expect, it } from "vitest";
import { RoleBindingsService } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../gen/platform/iam/v2beta1/roles_pb.js";
import { CAPABILITY_ENUM_NAMES } from "../../src/capabilities/index.js";
import { connectClient, restClient, type JsonObject, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { createGroup, createIdentity, createRole, expectInvalid, ok, restDetail, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

// The shapes a client generated from the vendor's own v2beta1 protos needs, asserted on the wire as
// raw JSON (docs/design.md, "Clients written for the same API elsewhere"). The field names and
// shapes are facts of that API; no vendor file is used.

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

let n = 0;
const newOrg = async () => uidOf(await createGroup(call, `vendor-${++n}`));

/** A Connect unary call with a JSON body, read as the raw JSON the server sent. */
async function connectJson(method: string, body: JsonObject, token = server.token): Promise<{ status: number; body: JsonObject }> {
  const res = await fetch(`${server.url}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as JsonObject };
}

/** A REST client calling as a new identity of `org` bound there to `role`. */
async function callerWith(org: string, role: string): Promise<RestClient> {
  const identity = uidOf(await createIdentity(call, org, { name: `caller-${++n}` }));
  await ok(call("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: role }));
  return restClient(server.url, (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
}

const ENUM_NAME = /^CAP_[A-Z]+(?:_[A-Z]+)*$/;

describe("role capabilities: enum names in, enum names out", () => {
  it("accepts the enum names and the dotted names, mixed, and answers enum names over REST", async () => {
    const org = await newOrg();
    const created = await ok(
      call("POST", `/iam/v2beta1/roles/${org}`, {
        name: "mixed",
        // A repeat in the other spelling collapses.
        capabilities: ["CAP_IAM_GROUPS_LIST", "repo.list", "groups.list", "CAP_REPO_BLOBS_GET", "CAP_EVENTS_SUBSCRIPTION_CREATE"],
      }),
    );
    expect(created["capabilities"]).toEqual([
      "CAP_IAM_GROUPS_LIST",
      "CAP_REPO_LIST",
      "CAP_REPO_BLOBS_GET",
      "CAP_EVENTS_SUBSCRIPTION_CREATE",
    ]);
    expect(await ok(call("GET", `/iam/v2beta1/roles/${uidOf(created)}`))).toEqual(created);
    const updated = await ok(call("PATCH", `/iam/v2beta1/roles/${uidOf(created)}`, { capabilities: ["tag.list", "CAP_TAG_CREATE"] }));
    expect(updated["capabilities"]).toEqual(["CAP_TAG_LIST", "CAP_TAG_CREATE"]);
    // The role's events carry the answered message.
    const events = await ok(call("GET", `/events/v2beta1/events?subject=${encodeURIComponent(uidOf(created))}`));
    expect((events["events"] as JsonObject[]).map((e) => ((e["data"] as JsonObject)["after"] as JsonObject)["capabilities"])).toEqual([
      created["capabilities"],
      updated["capabilities"],
    ]);
  });

  it("answers every role of a list, built-in ones included, with enum names only", async () => {
    const body = await ok(call("GET", "/iam/v2beta1/roles?page_size=200"));
    const all = (body["roles"] as JsonObject[]).flatMap((r) => r["capabilities"] as string[]);
    expect(all.length).toBeGreaterThan(0);
    for (const c of all) expect(c).toMatch(ENUM_NAME);
    const owner = (body["roles"] as JsonObject[]).find((r) => r["uid"] === "owner");
    expect([...((owner?.["capabilities"] ?? []) as string[])].sort()).toEqual([...CAPABILITY_ENUM_NAMES.values()].sort());
  });

  it("accepts enum names and answers them over gRPC and Connect", async () => {
    const org = await newOrg();
    const connect = connectClient(RolesService, server.url, server.token);
    const viaConnect = await connect.createRole({ parent: org, role: { name: "c", capabilities: ["CAP_IAM_IDENTITY_LIST", "tag.list"] } });
    expect(viaConnect.capabilities).toEqual(["CAP_IAM_IDENTITY_LIST", "CAP_TAG_LIST"]);
    const raw = await connectJson("platform.iam.v2beta1.RolesService/GetRole", { uid: viaConnect.uid });
    expect(raw.body["capabilities"]).toEqual(["CAP_IAM_IDENTITY_LIST", "CAP_TAG_LIST"]);
    const updated = await connect.updateRole({
      role: { uid: viaConnect.uid, capabilities: ["CAP_ADVISORIES_LIST"] },
      updateMask: { paths: ["capabilities"] },
    });
    expect(updated.capabilities).toEqual(["CAP_ADVISORIES_LIST"]);
  });

  const grpcRoles = grpcSuite(() => server, "platform.iam.v2beta1.RolesService", "platform/iam/v2beta1/roles.proto");
  it("over gRPC (@grpc/grpc-js)", async () => {
    const org = await newOrg();
    const role = await grpcRoles.rpc<{ uid: string; capabilities: string[] }>("CreateRole", {
      parent: org,
      role: { name: "g", capabilities: ["CAP_IAM_ROLE_BINDINGS_LIST", "roles.list"] },
    });
    expect(role.capabilities).toEqual(["CAP_IAM_ROLE_BINDINGS_LIST", "CAP_IAM_ROLES_LIST"]);
    const updated = await grpcRoles.rpc<{ capabilities: string[] }>("UpdateRole", {
      role: { uid: role.uid, capabilities: ["CAP_IAM_GROUPS_LIST"] },
      update_mask: { paths: ["capabilities"] },
    });
    expect(updated.capabilities).toEqual(["CAP_IAM_GROUPS_LIST"]);
    const bad = await grpcRoles.failure(
      grpcRoles.rpc("CreateRole", { parent: org, role: { name: "b", capabilities: ["cap_iam_groups_list"] } }),
    );
    expect(bad.details).toBe('Invalid argument: capabilities[0]: unknown capability "cap_iam_groups_list"');
  });

  it.each([
    ["an unknown enum name", "CAP_IAM_GROUPS_DESTROY", 'unknown capability "CAP_IAM_GROUPS_DESTROY"'],
    ["an enum name in lower case", "cap_iam_groups_list", 'unknown capability "cap_iam_groups_list"'],
    ["an enum name in mixed case", "Cap_Iam_Groups_List", 'unknown capability "Cap_Iam_Groups_List"'],
    ["a dotted name in capitals", "GROUPS.LIST", 'unknown capability "GROUPS.LIST"'],
    ["the vendor's unknown value", "UNKNOWN", 'unknown capability "UNKNOWN"'],
    ["an enum name with a NUL", "CAP_IAM_GROUPS_LIST\u0000", "must be valid text: no NUL characters or unpaired surrogates"],
    ["a huge name", `CAP_${"A".repeat(100_000)}`, "must be at most 100 characters"],
  ])("refuses %s on create and on update, naming the entry", async (_label, bad, description) => {
    const org = await newOrg();
    const created = await call("POST", `/iam/v2beta1/roles/${org}`, { name: "bad", capabilities: ["CAP_REPO_LIST", bad] });
    expect(expectInvalid(created, "capabilities[1]")).toBe(description);
    const role = await createRole(call, org, { name: "ok", capabilities: ["CAP_REPO_LIST"] });
    const patched = await call("PATCH", `/iam/v2beta1/roles/${uidOf(role)}`, { capabilities: [bad] });
    expect(expectInvalid(patched, "capabilities[0]")).toBe(description);
  });

  it("refuses a number where a name belongs", async () => {
    const org = await newOrg();
    expectInvalid(await call("POST", `/iam/v2beta1/roles/${org}`, { name: "n", capabilities: [103] }), "role.capabilities[0]");
  });

  it("grants exactly what the dotted spelling grants, and the grant ceiling reads both alike", async () => {
    const org = await newOrg();
    const caps = ["groups.list", "identity.list", "roles.list", "roles.create"];
    const dotted = await createRole(call, org, { name: "dotted", capabilities: caps });
    const named = await createRole(call, org, { name: "named", capabilities: caps.map((c) => CAPABILITY_ENUM_NAMES.get(c) ?? c) });
    expect(named["capabilities"]).toEqual(dotted["capabilities"]);
    const callers = [await callerWith(org, uidOf(dotted)), await callerWith(org, uidOf(named))];
    const outcomes = await Promise.all(
      callers.map(async (as) => [
        (await as("GET", `/iam/v2beta1/groups/${org}`)).status,
        (await as("GET", `/iam/v2beta1/identities?uidp.children_of=${org}`)).status,
        (await as("POST", `/iam/v2beta1/identities/${org}`, { name: `i${++n}` })).status,
        (await as("POST", `/iam/v2beta1/groups/${org}`, { name: "child" })).status,
        // Within the ceiling, in either spelling; beyond it, in either spelling.
        (await as("POST", `/iam/v2beta1/roles/${org}`, { name: `a${++n}`, capabilities: ["CAP_IAM_GROUPS_LIST", "identity.list"] })).status,
        (await as("POST", `/iam/v2beta1/roles/${org}`, { name: `b${++n}`, capabilities: ["groups.list", "CAP_IAM_IDENTITY_LIST"] })).status,
        restDetail(await as("POST", `/iam/v2beta1/roles/${org}`, { name: `c${++n}`, capabilities: ["CAP_REPO_LIST"] }), "ErrorInfo")?.[
          "reason"
        ],
        restDetail(await as("POST", `/iam/v2beta1/roles/${org}`, { name: `d${++n}`, capabilities: ["repo.list"] }), "ErrorInfo")?.[
          "reason"
        ],
      ]),
    );
    expect(outcomes[0]).toEqual([200, 200, 403, 403, 200, 200, "GRANT_CEILING", "GRANT_CEILING"]);
    expect(outcomes[1]).toEqual(outcomes[0]);
  });
});

describe("identity claimMatch: only the member in use", () => {
  const keysOf = (o: unknown) => Object.keys(o as JsonObject).sort();

  it("answers one key per pair in use over REST: create, get, list", async () => {
    const org = await newOrg();
    const exact = await createIdentity(call, org, { name: "exact", claimMatch: { issuer: "https://i.example", subject: "s" } });
    expect(keysOf(exact["claimMatch"])).toEqual(["issuer", "subject"]);
    const patterns = await createIdentity(call, org, {
      name: "patterns",
      claimMatch: { issuerPattern: "https://i\\.example/.*", subjectPattern: "repo:.*", audiencePattern: "api-.*" },
    });
    expect(patterns["claimMatch"]).toEqual({
      issuerPattern: "https://i\\.example/.*",
      subjectPattern: "repo:.*",
      audiencePattern: "api-.*",
    });
    const none = await createIdentity(call, org, { name: "none" });
    expect(none["claimMatch"]).toEqual({});
    expect((await ok(call("GET", `/iam/v2beta1/identities/${uidOf(exact)}`)))["claimMatch"]).toEqual({
      issuer: "https://i.example",
      subject: "s",
    });
    const list = await ok(call("GET", `/iam/v2beta1/identities?uidp.children_of=${org}&order_by=name`));
    expect((list["identities"] as JsonObject[]).map((i) => keysOf(i["claimMatch"]))).toEqual([
      ["issuer", "subject"],
      [],
      ["audiencePattern", "issuerPattern", "subjectPattern"],
    ]);
  });

  it("still accepts a pair's unused member given empty, and refuses two members with values", async () => {
    const org = await newOrg();
    const created = await createIdentity(call, org, {
      name: "all-six",
      claimMatch: {
        issuer: "https://i.example",
        issuerPattern: "",
        subject: "",
        subjectPattern: "s-.*",
        audience: "",
        audiencePattern: "",
      },
    });
    expect(created["claimMatch"]).toEqual({ issuer: "https://i.example", subjectPattern: "s-.*" });
    const both = await call("POST", `/iam/v2beta1/identities/${org}`, {
      name: "both",
      claimMatch: { issuer: "https://a", issuerPattern: "https://b/.*" },
    });
    expect(expectInvalid(both, "identity.claimMatch.issuerPattern")).toBe(
      "cannot be given with issuer: they are alternatives (one of iss)",
    );
  });

  it("replaces a pair's member when the other is set, with or without a mask", async () => {
    const org = await newOrg();
    const identity = await createIdentity(call, org, { name: "switch", claimMatch: { issuer: "https://i.example", subject: "s" } });
    const path = `/iam/v2beta1/identities/${uidOf(identity)}`;
    expect((await ok(call("PATCH", path, { claimMatch: { subjectPattern: "s-.*" } })))["claimMatch"]).toEqual({
      issuer: "https://i.example",
      subjectPattern: "s-.*",
    });
    // An echoed body with the unused member empty, as a client that writes every field sends it.
    const echoed = await ok(call("PATCH", path, { claimMatch: { issuer: "", issuerPattern: "https://i\\.example/.*", audience: "api" } }));
    expect(echoed["claimMatch"]).toEqual({ issuerPattern: "https://i\\.example/.*", subjectPattern: "s-.*", audience: "api" });
    const masked = await ok(call("PATCH", `${path}?updateMask=claim_match.subject`, { claimMatch: { subject: "t" } }));
    expect(masked["claimMatch"]).toEqual({ issuerPattern: "https://i\\.example/.*", subject: "t", audience: "api" });
  });

  const grpcIdentities = grpcSuite(() => server, "platform.iam.v2beta1.IdentitiesService", "platform/iam/v2beta1/identities.proto");
  it("answers only the member in use over Connect JSON and gRPC", async () => {
    const org = await newOrg();
    const identity = await createIdentity(call, org, { name: "wire", claimMatch: { issuer: "https://i.example", subjectPattern: "x-.*" } });
    const raw = await connectJson("platform.iam.v2beta1.IdentitiesService/GetIdentity", { uid: uidOf(identity) });
    expect(raw.status).toBe(200);
    expect(raw.body["claimMatch"]).toEqual({ issuer: "https://i.example", subjectPattern: "x-.*" });
    // grpc-js's loader names the member in use of each oneof set (iss, sub) and has none for aud.
    const got = await grpcIdentities.rpc<{ claim_match: JsonObject }>("GetIdentity", { uid: uidOf(identity) });
    expect(got.claim_match).toEqual({ issuer: "https://i.example", iss: "issuer", subject_pattern: "x-.*", sub: "subject_pattern" });
  });

  it("an identity provider answers its one configuration member, oidc, and nothing beside it", async () => {
    const org = await newOrg();
    const p = await ok(
      call("POST", `/iam/v2beta1/identityProviders/${org}`, {
        name: "sso",
        oidc: { issuer: "https://accounts.example.com", clientId: "platform", clientSecret: "s" },
      }),
    );
    expect(keysOf(p)).toEqual(["createTime", "defaultRole", "description", "name", "oidc", "uid", "updateTime"]);
    expect(p["oidc"]).toEqual({ issuer: "https://accounts.example.com", clientId: "platform", additionalScopes: [] });
  });
});

describe("role bindings: identityUid and roleUid beside the hydrated objects", () => {
  const expectUids = (b: JsonObject, identity: string, role: string) => {
    expect(b).toMatchObject({ identityUid: identity, roleUid: role, identity: { uid: identity }, role: { uid: role } });
  };

  it("on create, get, list, update and batch create over REST, and in the binding's events", async () => {
    const org = await newOrg();
    const identity = uidOf(await createIdentity(call, org, { name: "bound" }));
    const b = await ok(call("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: identity, roleUid: "viewer" }));
    expectUids(b, identity, "viewer");
    expectUids(await ok(call("GET", `/iam/v2beta1/roleBindings/${uidOf(b)}`)), identity, "viewer");
    const listed = await ok(call("GET", `/iam/v2beta1/roleBindings?identity=${encodeURIComponent(identity)}`));
    expectUids((listed["roleBindings"] as JsonObject[])[0]!, identity, "viewer");
    expectUids(await ok(call("PATCH", `/iam/v2beta1/roleBindings/${uidOf(b)}`, { roleUid: "editor" })), identity, "editor");
    const batch = await ok(
      call("POST", `/iam/v2beta1/roleBindings/${org}:batchCreate`, { requests: [{ identityUid: identity, roleUid: "owner" }] }),
    );
    expectUids((batch["roleBindings"] as JsonObject[])[0]!, identity, "owner");

    const events = await ok(call("GET", `/events/v2beta1/events?subject=${encodeURIComponent(uidOf(b))}`));
    const data = (events["events"] as JsonObject[]).map((e) => e["data"] as JsonObject);
    expect(data.map((d) => [(d["after"] as JsonObject)?.["roleUid"], (d["after"] as JsonObject)?.["identityUid"]])).toEqual([
      ["viewer", identity],
      ["editor", identity],
    ]);
  });

  it("over Connect JSON and gRPC", async () => {
    const org = await newOrg();
    const identity = uidOf(await createIdentity(call, org, { name: "bound" }));
    const raw = await connectJson("platform.iam.v2beta1.RoleBindingsService/CreateRoleBinding", {
      parent: org,
      identityUid: identity,
      roleUid: "viewer",
    });
    expect(raw.status).toBe(200);
    expectUids(raw.body, identity, "viewer");
    const client = connectClient(RoleBindingsService, server.url, server.token, "grpc");
    const got = await client.getRoleBinding({ uid: raw.body["uid"] as string });
    expect([got.identityUid, got.roleUid]).toEqual([identity, "viewer"]);
  });
});

describe("POST /iam/v2beta1/roleBindings:batchCreate with parent in the body", () => {
  it("creates the bindings at the body's group, as the path form does", async () => {
    const org = await newOrg();
    const identity = uidOf(await createIdentity(call, org, { name: "batch" }));
    const res = await ok(
      call("POST", "/iam/v2beta1/roleBindings:batchCreate", {
        parent: org,
        requests: [
          { identityUid: identity, roleUid: "viewer" },
          { identityUid: identity, roleUid: "registry.pull" },
        ],
      }),
    );
    const made = res["roleBindings"] as JsonObject[];
    expect(made.map((b) => [(b["group"] as JsonObject)["uid"], b["roleUid"], b["identityUid"]])).toEqual([
      [org, "viewer", identity],
      [org, "registry.pull", identity],
    ]);
    for (const b of made) expect(uidOf(b)).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
  });

  it("refuses a missing, malformed or unknown parent as the path form does", async () => {
    const requests = [{ identityUid: "0123456789abcdef0123456789abcdef01234567/0123456789abcdef", roleUid: "viewer" }];
    expectInvalid(await call("POST", "/iam/v2beta1/roleBindings:batchCreate", { requests }), "parent");
    expectInvalid(await call("POST", "/iam/v2beta1/roleBindings:batchCreate", { parent: "not a uid", requests }), "parent");
    expectInvalid(await call("POST", "/iam/v2beta1/roleBindings:batchCreate", { parent: 5, requests }), "parent");
    const unknown = await call("POST", "/iam/v2beta1/roleBindings:batchCreate", { parent: "0".repeat(40), requests });
    expect([403, 404]).toContain(unknown.status);
  });

  it("is in the OpenAPI document as a POST", async () => {
    const doc = await ok(restClient(server.url, undefined)("GET", "/openapi.json"));
    const paths = doc["paths"] as Record<string, JsonObject>;
    expect(Object.keys(paths["/iam/v2beta1/roleBindings:batchCreate"] ?? {})).toContain("post");
  });
});
