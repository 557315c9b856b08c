import { Code } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { AccountAssociationsService } from "../../gen/platform/iam/v2beta1/account_associations_pb.js";
import { connectClient, grpcStatusDetails, type JsonObject, type RestClient } from "../support/clients.js";
import { connectFailure } from "../support/connect-failure.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { createGroup, expectInvalid, expectPrecondition, ok, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TENANT = "6f1c1d2e-3a4b-4c5d-8e9f-0a1b2c3d4e5f";
const CLIENT = "0b9f6a8e-1c2d-4e3f-9a8b-7c6d5e4f3a2b";
const BASE = "/iam/v2beta1/accountAssociations";

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const group = async (name: string, parent?: string) => uidOf(await createGroup(call, name, parent));
const associate = (groupUid: string, body: JsonObject) => ok(call("POST", `${BASE}/${groupUid}`, body));

describe("account associations over REST", () => {
  it("creates the association of a group, whose uid is the group's uid", async () => {
    const g = await group("assoc-org");
    const a = await associate(g, {
      name: "prod accounts",
      description: "d",
      amazon: { account: "123456789012" },
      google: { projectId: "my-project-1", projectNumber: "987654321" },
      azure: { tenantId: TENANT, clientIds: { web: CLIENT } },
      github: { installations: [42, "43"] },
    });
    expect(a).toEqual({
      uid: g,
      name: "prod accounts",
      description: "d",
      amazon: { account: "123456789012" },
      google: { projectId: "my-project-1", projectNumber: "987654321" },
      azure: { tenantId: TENANT, clientIds: { web: CLIENT } },
      // int64 renders as JSON strings; numbers and strings are both accepted
      github: { installations: ["42", "43"] },
      createTime: a["createTime"],
      updateTime: a["createTime"],
    });
    expect(a["createTime"]).toMatch(TIMESTAMP);
    const got = await call("GET", `${BASE}/${g}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(a);
  });

  it("renders unset providers as null", async () => {
    const g = await group("assoc-empty");
    const a = await associate(g, { amazon: { account: "000000000001" } });
    expect(a).toMatchObject({
      uid: g,
      name: "",
      description: "",
      amazon: { account: "000000000001" },
      google: null,
      azure: null,
      github: null,
    });
  });

  it("allows one association per group: a second create is ALREADY_EXISTS (409)", async () => {
    const g = await group("assoc-once");
    await associate(g, { name: "first" });
    const again = await call("POST", `${BASE}/${g}`, { name: "second" });
    expect(again.status).toBe(409);
    expect(again.body["code"]).toBe(6);
    const got = await call("GET", `${BASE}/${g}`);
    expect(got.body["name"]).toBe("first");
  });

  it("ignores a uid in the create body", async () => {
    const g = await group("assoc-uid");
    const other = await group("assoc-uid-other");
    const a = await associate(g, { uid: other, name: "x" });
    expect(a["uid"]).toBe(g);
    expect((await call("GET", `${BASE}/${other}`)).status).toBe(404);
  });

  it("is NOT_FOUND for a group that does not exist", async () => {
    const res = await call("POST", `${BASE}/${"0".repeat(40)}`, { name: "x" });
    expect(res.status).toBe(404);
    expect(res.body["code"]).toBe(5);
    expect((await call("GET", `${BASE}/${"0".repeat(40)}`)).status).toBe(404);
  });

  it.each<[string, JsonObject, string]>([
    ["an 11-digit AWS account", { amazon: { account: "12345678901" } }, "amazon.account"],
    ["a 13-digit AWS account", { amazon: { account: "1234567890123" } }, "amazon.account"],
    ["a non-numeric AWS account", { amazon: { account: "12345678901a" } }, "amazon.account"],
    ["an empty AWS account", { amazon: {} }, "amazon.account"],
    ["an upper-case project id", { google: { projectId: "My-project" } }, "google.project_id"],
    ["a short project id", { google: { projectId: "abcde" } }, "google.project_id"],
    ["a project id ending in a hyphen", { google: { projectId: "my-project-" } }, "google.project_id"],
    ["a project id starting with a digit", { google: { projectId: "1my-project" } }, "google.project_id"],
    ["a missing project id", { google: { projectNumber: "12" } }, "google.project_id"],
    ["a non-numeric project number", { google: { projectId: "my-project", projectNumber: "12a" } }, "google.project_number"],
    ["a tenant id that is no UUID", { azure: { tenantId: "contoso" } }, "azure.tenant_id"],
    ["a missing tenant id", { azure: { clientIds: { web: CLIENT } } }, "azure.tenant_id"],
    ["a client id that is no UUID", { azure: { tenantId: TENANT, clientIds: { web: "nope" } } }, "azure.client_ids[web]"],
    ["an empty client name", { azure: { tenantId: TENANT, clientIds: { "": CLIENT } } }, "azure.client_ids"],
    ["a zero installation", { github: { installations: ["1", "0"] } }, "github.installations[1]"],
    ["a negative installation", { github: { installations: [-5] } }, "github.installations[0]"],
    ["a repeated installation", { github: { installations: [7, "7"] } }, "github.installations[1]"],
    ["a name over 200 characters", { name: "n".repeat(201) }, "name"],
  ])("rejects %s with INVALID_ARGUMENT naming the field", async (_label, body, field) => {
    const g = await group("assoc-invalid");
    expectInvalid(await call("POST", `${BASE}/${g}`, body), field);
    expect((await call("GET", `${BASE}/${g}`)).status).toBe(404);
  });

  it("rejects an installation that is not an integer", async () => {
    const g = await group("assoc-json");
    const res = await call("POST", `${BASE}/${g}`, { github: { installations: ["abc"] } });
    expect(res.status).toBe(400);
    expect(res.body["message"]).toMatch(/installations/);
  });

  it("updates what the body names, or exactly what updateMask names", async () => {
    const g = await group("assoc-update");
    const created = await associate(g, { name: "a", amazon: { account: "111111111111" }, github: { installations: [1] } });
    server.clock.advance(1000);
    const patched = await call("PATCH", `${BASE}/${g}`, { google: { projectId: "added-project" } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      uid: g,
      name: "a",
      amazon: { account: "111111111111" },
      google: { projectId: "added-project", projectNumber: "" },
      github: { installations: ["1"] },
      createTime: created["createTime"],
    });
    expect(patched.body["updateTime"]).not.toBe(created["updateTime"]);

    // A mask naming a provider that the body leaves out clears it.
    const cleared = await call("PATCH", `${BASE}/${g}?updateMask=amazon`, { name: "ignored" });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ name: "a", amazon: null, google: { projectId: "added-project" } });

    // So does null in the body.
    const nulled = await call("PATCH", `${BASE}/${g}`, { github: null });
    expect(nulled.body).toMatchObject({ github: null, google: { projectId: "added-project" } });

    // A nested path changes one field of a provider.
    const nested = await call("PATCH", `${BASE}/${g}?updateMask=google.project_number`, {
      google: { projectNumber: "55", projectId: "ignored-one" },
    });
    expect(nested.body["google"]).toEqual({ projectId: "added-project", projectNumber: "55" });

    expectInvalid(await call("PATCH", `${BASE}/${g}`, { amazon: { account: "12" } }), "amazon.account");
    expect((await call("GET", `${BASE}/${g}`)).body["amazon"]).toBeNull();
  });

  it("lists by scope: a group's own association is in its children_of and descendants_of", async () => {
    const root = await group("assoc-scope");
    const child = await group("child", root);
    const grandchild = await group("grandchild", child);
    const bare = await group("bare", root);
    for (const [uid, name] of [
      [root, "r"],
      [child, "c"],
      [grandchild, "gc"],
    ] as const)
      await associate(uid, { name });
    const uids = async (query: string) => {
      const res = await call("GET", `${BASE}?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body["accountAssociations"] as JsonObject[]).map((a) => a["uid"]);
    };
    expect(await uids(`uidp.children_of=${root}`)).toEqual([root]);
    expect(await uids(`uidp.children_of=${child}`)).toEqual([child]);
    expect(await uids(`uidp.children_of=${bare}`)).toEqual([]);
    expect((await uids(`uidp.descendants_of=${root}`)).sort()).toEqual([root, child, grandchild].sort());
    expect((await uids(`uidp.descendants_of=${child}`)).sort()).toEqual([child, grandchild].sort());
    expect((await uids(`uidp.in_root=${root}`)).sort()).toEqual([root, child, grandchild].sort());
    // held by the group itself or a group above it
    expect((await uids(`uidp.ancestors_of=${child}`)).sort()).toEqual([root, child].sort());
    expect(await uids(`uidp.descendants_of=${root}&name=gc`)).toEqual([grandchild]);
    const page = await call("GET", `${BASE}?uidp.descendants_of=${root}&order_by=name%20desc&page_size=2`);
    expect((page.body["accountAssociations"] as JsonObject[]).map((a) => a["name"])).toEqual(["r", "gc"]);
    expect(page.body["totalCount"]).toBe("3");
    const next = await call(
      "GET",
      `${BASE}?uidp.descendants_of=${root}&order_by=name%20desc&page_size=2&page_token=${encodeURIComponent(page.body["nextPageToken"] as string)}`,
    );
    expect((next.body["accountAssociations"] as JsonObject[]).map((a) => a["name"])).toEqual(["c"]);
  });

  it("keeps a group with an association from being deleted (RESOURCE_NOT_EMPTY)", async () => {
    const g = await group("assoc-holder");
    await associate(g, { amazon: { account: "222222222222" } });
    const refused = expectPrecondition(await call("DELETE", `/iam/v2beta1/groups/${g}`), "RESOURCE_NOT_EMPTY");
    expect(refused).toMatch(/account association/);

    const deleted = await call("DELETE", `${BASE}/${g}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({});
    expect((await call("GET", `${BASE}/${g}`)).status).toBe(404);
    expect((await call("DELETE", `${BASE}/${g}`)).status).toBe(404);
    expect((await call("DELETE", `/iam/v2beta1/groups/${g}`)).status).toBe(200);
  });
});

describe("account associations over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(
    () => server,
    "platform.iam.v2beta1.AccountAssociationsService",
    "platform/iam/v2beta1/account_associations.proto",
  );

  it("creates, updates with a mask, lists and deletes", async () => {
    const g = await group("assoc-grpc");
    const created = await rpc<JsonObject>("CreateAccountAssociation", {
      parent: g,
      account_association: {
        name: "n",
        github: { installations: ["9007199254740993"] },
        azure: { tenant_id: TENANT, client_ids: { api: CLIENT } },
      },
    });
    expect(created).toMatchObject({
      uid: g,
      name: "n",
      github: { installations: ["9007199254740993"] },
      azure: { tenant_id: TENANT, client_ids: { api: CLIENT } },
    });
    const updated = await rpc<JsonObject>("UpdateAccountAssociation", {
      account_association: { uid: g, amazon: { account: "333333333333" }, name: "ignored" },
      update_mask: { paths: ["amazon.account"] },
    });
    expect(updated).toMatchObject({ name: "n", amazon: { account: "333333333333" }, github: { installations: ["9007199254740993"] } });
    const list = await rpc<JsonObject>("ListAccountAssociations", { uidp: { children_of: g } });
    expect((list["account_associations"] as JsonObject[]).map((a) => a["uid"])).toEqual([g]);
    expect(list["total_count"]).toBe("1");

    const dup = await failure(rpc("CreateAccountAssociation", { parent: g, account_association: {} }));
    expect(dup.code).toBe(6);

    await rpc("DeleteAccountAssociation", { uid: g });
    expect((await failure(rpc("GetAccountAssociation", { uid: g }))).code).toBe(5);
  });

  it("names the violated field in grpc-status-details-bin", async () => {
    const g = await group("assoc-grpc-bad");
    const err = await failure(rpc("CreateAccountAssociation", { parent: g, account_association: { google: { project_id: "UPPER" } } }));
    expect(err.code).toBe(3);
    const status = grpcStatusDetails(err);
    expect(status.message).toMatch(/^Invalid argument: google.project_id: /);
    const badRequest = status.details.find((d) => d.type === "google.rpc.BadRequest")?.value as { fieldViolations: { field: string }[] };
    expect(badRequest.fieldViolations[0]?.field).toBe("google.project_id");

    const noParent = await failure(rpc("CreateAccountAssociation", { parent: "", account_association: {} }));
    expect(noParent.code).toBe(3);
    expect(grpcStatusDetails(noParent).message).toBe("Invalid argument: parent: is required");
  });
});

describe("account associations over Connect", () => {
  it("round-trips int64 installations and maps, and types its errors", async () => {
    const client = connectClient(AccountAssociationsService, server.url, server.token);
    const g = await group("assoc-connect");
    const created = await client.createAccountAssociation({
      parent: g,
      accountAssociation: { github: { installations: [5n, 6n] }, azure: { tenantId: TENANT, clientIds: { a: CLIENT } } },
    });
    expect(created.uid).toBe(g);
    expect(created.github?.installations).toEqual([5n, 6n]);
    const got = await client.getAccountAssociation({ uid: g });
    expect(got.azure?.clientIds).toEqual({ a: CLIENT });

    const updated = await client.updateAccountAssociation({
      accountAssociation: { uid: g, azure: { tenantId: TENANT, clientIds: { b: CLIENT } } },
      updateMask: { paths: ["azure.client_ids"] },
    });
    expect(updated.azure?.clientIds).toEqual({ b: CLIENT });

    const err = await connectFailure(client.updateAccountAssociation({ accountAssociation: { uid: g, github: { installations: [0n] } } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("github.installations[0]");
    expect(err.findDetails(ErrorInfoSchema)[0]?.reason).toBe("INVALID_ARGUMENT");

    const dup = await connectFailure(client.createAccountAssociation({ parent: g, accountAssociation: {} }));
    expect(dup.code).toBe(Code.AlreadyExists);
    const missing = await connectFailure(client.updateAccountAssociation({ accountAssociation: { uid: "", name: "x" } }));
    expect(missing.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("account_association.uid");
  });
});
