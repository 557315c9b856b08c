import grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { isNull } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RolesService } from "../../gen/platform/iam/v2beta1/roles_pb.js";
import { BUILT_IN_ROLES, CAPABILITIES, enumCapabilities } from "../../src/capabilities/index.js";
import { schema } from "../../src/db/index.js";
import { connectClient, grpcStatusDetails, restClient, type JsonObject, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import {
  TIMESTAMP,
  createGroup,
  createRole,
  expectHeldUntilDeleted,
  expectInvalid,
  expectPrecondition,
  ok,
  restDetail,
  uidOf,
} from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

const BUILT_IN_NAMES = BUILT_IN_ROLES.map((r) => r.name);

let server: TestServer;
let call: RestClient;

// A server of its own, not the shared one: a test lists every role in one page,
// which other files' custom roles would overflow.
beforeAll(async () => {
  server = await startTestServer();
  call = restClient(server.url, server.token);
});
afterAll(async () => {
  await server?.stop();
});

const roles = (body: JsonObject) => body["roles"] as JsonObject[];
const list = (query = "") => ok(call("GET", `/iam/v2beta1/roles${query ? `?${query}` : ""}`));

describe("built-in roles", () => {
  // Written from the catalog when the server opens its fresh database (docs/design.md, "Built-in roles").
  it("are in a fresh server's database exactly as the capability catalog defines them", async () => {
    const rows = await server.app.database.db.select().from(schema.roles).where(isNull(schema.roles.parentUid));
    const seeded = rows
      .map((r) => ({ uid: r.uid, path: r.path, name: r.name, description: r.description, capabilities: r.capabilities }))
      .sort((a, b) => a.uid.localeCompare(b.uid));
    const catalog = BUILT_IN_ROLES.map((r) => ({
      uid: r.uid,
      path: r.uid,
      name: r.name,
      description: r.description,
      capabilities: r.capabilities,
    })).sort((a, b) => a.uid.localeCompare(b.uid));
    expect(seeded).toEqual(catalog);
    // Every capability a built-in grants is in the catalog.
    for (const r of BUILT_IN_ROLES) for (const c of r.capabilities) expect(CAPABILITIES).toContain(c);
  });

  it("are listed without any filter, with the list envelope", async () => {
    const body = await list("page_size=200");
    const byUid = new Map(roles(body).map((r) => [uidOf(r), r]));
    for (const builtIn of BUILT_IN_ROLES) {
      const r = byUid.get(builtIn.uid);
      expect(r).toEqual({
        uid: builtIn.uid,
        name: builtIn.name,
        description: builtIn.description,
        // Answered as enum names (docs/design.md, "Capability names").
        capabilities: enumCapabilities(builtIn.capabilities),
        parent: "",
        createTime: r?.["createTime"],
        updateTime: r?.["updateTime"],
      });
      expect(r?.["createTime"]).toMatch(TIMESTAMP);
    }
    expect(body).toMatchObject({ nextPageToken: "", skipped: 0 });
    expect(Number(body["totalCount"])).toBeGreaterThanOrEqual(BUILT_IN_ROLES.length);
  });

  it("are found by name and by uid", async () => {
    const body = await list("name=viewer");
    expect(roles(body).map(uidOf)).toEqual(["viewer"]);
    expect(body["totalCount"]).toBe("1");
    const viewer = await ok(call("GET", "/iam/v2beta1/roles/viewer"));
    expect(viewer).toEqual(roles(body)[0]);
    expect(viewer["capabilities"]).toContain("CAP_IAM_GROUPS_LIST");
    expect((await ok(call("GET", "/iam/v2beta1/roles/registry.pull")))["capabilities"]).toEqual([
      "CAP_IAM_GROUPS_LIST",
      "CAP_REPO_LIST",
      "CAP_TAG_LIST",
      "CAP_REPO_BLOBS_GET",
    ]);
  });

  it("cannot be changed or deleted", async () => {
    for (const uid of BUILT_IN_NAMES) {
      const patch = await call("PATCH", `/iam/v2beta1/roles/${uid}`, { description: "mine now" });
      expect(expectPrecondition(patch, "BUILT_IN_ROLE")).toBe(`role ${uid} is built in and cannot be changed`);
      const del = await call("DELETE", `/iam/v2beta1/roles/${uid}`);
      expect(expectPrecondition(del, "BUILT_IN_ROLE")).toBe(`role ${uid} is built in and cannot be deleted`);
    }
    const viewer = BUILT_IN_ROLES.find((r) => r.uid === "viewer")!;
    expect(await ok(call("GET", "/iam/v2beta1/roles/viewer"))).toMatchObject({
      description: viewer.description,
      capabilities: enumCapabilities(viewer.capabilities),
    });
  });
});

describe("custom roles over REST", () => {
  it("are created in a group with a capability list", async () => {
    const org = await createGroup(call, "roles-create");
    const res = await call("POST", `/iam/v2beta1/roles/${uidOf(org)}`, {
      name: "deployer",
      description: "pushes",
      capabilities: ["repo.list", "tag.create", "repo.list"],
      parent: "ignored",
      uid: "chosen",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const role = res.body;
    expect(uidOf(role)).toMatch(/^[0-9a-f]{16}$/);
    // Repeats collapse, order kept; parent is output only.
    expect(role).toEqual({
      uid: uidOf(role),
      name: "deployer",
      description: "pushes",
      capabilities: ["CAP_REPO_LIST", "CAP_TAG_CREATE"],
      parent: uidOf(org),
      createTime: role["createTime"],
      updateTime: role["createTime"],
    });
    expect(await ok(call("GET", `/iam/v2beta1/roles/${uidOf(role)}`))).toEqual(role);
  });

  it.each([
    [
      "an unknown capability",
      { name: "r", capabilities: ["repo.list", "repo.destroy"] },
      "capabilities[1]",
      'unknown capability "repo.destroy"',
    ],
    ["no name", { capabilities: [] }, "name", "is required"],
    ["a long name", { name: "r".repeat(201) }, "name", "must be at most 200 characters"],
    ["a long description", { name: "r", description: "d".repeat(4097) }, "description", "must be at most 4096 characters"],
  ])("refuses %s", async (_label, body, field, description) => {
    const org = await createGroup(call, `roles-bad-${Math.random().toString(16).slice(2, 8)}`);
    expect(expectInvalid(await call("POST", `/iam/v2beta1/roles/${uidOf(org)}`, body), field)).toBe(description);
    expect((await list(`uidp.children_of=${uidOf(org)}`))["totalCount"]).toBe("0");
  });

  it("have names unique within their group and distinct from the built-ins", async () => {
    const org = await createGroup(call, "roles-unique");
    const other = await createGroup(call, "roles-unique-2");
    await createRole(call, uidOf(org), { name: "ops" });
    const dup = await call("POST", `/iam/v2beta1/roles/${uidOf(org)}`, { name: "ops" });
    expect(dup.status).toBe(409);
    expect(dup.body["message"]).toBe('Already exists: the group already has a role named "ops"');
    await createRole(call, uidOf(other), { name: "ops" });
    const builtIn = await call("POST", `/iam/v2beta1/roles/${uidOf(org)}`, { name: "viewer" });
    expect(builtIn.status).toBe(409);
    expect(restDetail(builtIn, "ResourceInfo")).toMatchObject({ resourceType: "role", resourceName: "viewer" });
    const renamed = await createRole(call, uidOf(org), { name: "ops2" });
    expect((await call("PATCH", `/iam/v2beta1/roles/${uidOf(renamed)}`, { name: "ops" })).status).toBe(409);
    expect((await call("PATCH", `/iam/v2beta1/roles/${uidOf(renamed)}`, { name: "owner" })).status).toBe(409);
  });

  it("need an existing group", async () => {
    const res = await call("POST", `/iam/v2beta1/roles/${"d".repeat(40)}`, { name: "r" });
    expect(res.status).toBe(404);
    expect(restDetail(res, "ResourceInfo")).toMatchObject({ resourceType: "group", resourceName: "d".repeat(40) });
    expect((await call("GET", "/iam/v2beta1/roles/0123456789abcdef")).status).toBe(404);
  });

  it("list by scope, name and order, beside the built-ins", async () => {
    const org = await createGroup(call, "roles-list");
    const team = await createGroup(call, "team", uidOf(org));
    const b = await createRole(call, uidOf(org), { name: "b-role" });
    const a = await createRole(call, uidOf(org), { name: "a-role" });
    const c = await createRole(call, uidOf(team), { name: "c-role" });

    expect(roles(await list(`uidp.children_of=${uidOf(org)}&order_by=name`)).map(uidOf)).toEqual([uidOf(a), uidOf(b)]);
    expect(roles(await list(`uidp.children_of=${uidOf(team)}`)).map(uidOf)).toEqual([uidOf(c)]);
    expect(roles(await list(`uidp.descendants_of=${uidOf(org)}&order_by=name%20desc`)).map(uidOf)).toEqual([uidOf(c), uidOf(b), uidOf(a)]);
    expect(roles(await list(`uidp.in_root=${uidOf(org)}&order_by=name`)).map((r) => r["name"])).toEqual(["a-role", "b-role", "c-role"]);
    // ancestors_of: the custom roles of the group and the groups above it (what may be bound there, built-ins aside).
    expect(roles(await list(`uidp.ancestors_of=${uidOf(team)}&order_by=name`)).map(uidOf)).toEqual([uidOf(a), uidOf(b), uidOf(c)]);
    expect(roles(await list(`uidp.ids=viewer&uidp.ids=${uidOf(c)}&order_by=name`)).map(uidOf)).toEqual([uidOf(c), "viewer"]);

    // Without a scope: built-ins and custom roles together, ordered by name across pages.
    const seen: string[] = [];
    let token = "";
    for (let i = 0; i < 50; i++) {
      const page = await list(`order_by=name&page_size=3${token ? `&page_token=${encodeURIComponent(token)}` : ""}`);
      seen.push(...roles(page).map((r) => r["name"] as string));
      token = page["nextPageToken"] as string;
      if (!token) break;
    }
    expect(seen).toEqual([...seen].sort());
    for (const name of [...BUILT_IN_NAMES, "a-role", "b-role", "c-role"]) expect(seen).toContain(name);
  });

  it("update the fields in the body, or exactly those in the mask", async () => {
    const org = await createGroup(call, "roles-update");
    const role = await createRole(call, uidOf(org), { name: "r", description: "d", capabilities: ["repo.list"] });
    const path = `/iam/v2beta1/roles/${uidOf(role)}`;
    server.clock.advance(2000);
    const caps = await ok(call("PATCH", path, { capabilities: ["tag.list", "tag.create"] }));
    expect(caps).toMatchObject({ name: "r", description: "d", capabilities: ["CAP_TAG_LIST", "CAP_TAG_CREATE"], parent: uidOf(org) });
    expect(caps["updateTime"]).not.toBe(role["updateTime"]);
    const masked = await ok(call("PATCH", `${path}?updateMask=description`, { description: "new", name: "ignored" }));
    expect(masked).toMatchObject({ name: "r", description: "new" });
    const cleared = await ok(call("PATCH", path, { capabilities: [] }));
    expect(cleared["capabilities"]).toEqual([]);
    expectInvalid(await call("PATCH", path, { capabilities: ["nope"] }), "capabilities[0]");
    expectInvalid(await call("PATCH", `${path}?updateMask=parent`, {}), "update_mask");
    expect(await ok(call("GET", path))).toEqual(cleared);
  });

  it("delete an unbound custom role; a group holding one is not empty", async () => {
    const org = await createGroup(call, "roles-delete");
    const role = await createRole(call, uidOf(org), { name: "r" });
    await expectHeldUntilDeleted(call, uidOf(org), `/iam/v2beta1/roles/${uidOf(role)}`, "roles");
  });
});

describe("roles over gRPC (@grpc/grpc-js)", () => {
  interface RoleMsg {
    uid: string;
    name: string;
    description: string;
    capabilities: string[];
    parent: string;
  }
  const { rpc, failure } = grpcSuite(() => server, "platform.iam.v2beta1.RolesService", "platform/iam/v2beta1/roles.proto");

  it("lists built-ins, manages a custom role, and refuses built-in changes", async () => {
    const byName = await rpc<{ roles: RoleMsg[]; total_count: string }>("ListRoles", { name: "editor" });
    expect(byName.roles.map((r) => r.uid)).toEqual(["editor"]);
    expect(byName.roles[0]?.parent).toBe("");

    const org = await createGroup(call, "grpc-roles");
    const role = await rpc<RoleMsg>("CreateRole", { parent: uidOf(org), role: { name: "g", capabilities: ["repo.list"] } });
    expect(role).toMatchObject({ name: "g", capabilities: ["CAP_REPO_LIST"], parent: uidOf(org) });
    const updated = await rpc<RoleMsg>("UpdateRole", {
      role: { uid: role.uid, capabilities: ["repo.list", "tag.list"] },
      update_mask: { paths: ["capabilities"] },
    });
    expect(updated.capabilities).toEqual(["CAP_REPO_LIST", "CAP_TAG_LIST"]);
    expect(await rpc<RoleMsg>("GetRole", { uid: role.uid })).toEqual(updated);
    await rpc("DeleteRole", { uid: role.uid });

    const refused = await failure(rpc("DeleteRole", { uid: "owner" }));
    expect(refused.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(grpcStatusDetails(refused).details.find((d) => d.type === "google.rpc.PreconditionFailure")?.value).toMatchObject({
      violations: [{ type: "BUILT_IN_ROLE" }],
    });
    const unknown = await failure(rpc("CreateRole", { parent: uidOf(org), role: { name: "x", capabilities: ["everything"] } }));
    expect(unknown.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe("roles over Connect", () => {
  it("creates, refuses built-in changes and unknown capabilities with typed details", async () => {
    const client = connectClient(RolesService, server.url, server.token);
    const org = await createGroup(call, "connect-roles");
    const role = await client.createRole({ parent: uidOf(org), role: { name: "c", capabilities: ["advisories.list"] } });
    expect(role.parent).toBe(uidOf(org));
    const listed = await client.listRoles({ uidp: { childrenOf: uidOf(org) } });
    expect(listed.roles).toEqual([role]);

    const builtIn = await client.updateRole({ role: { uid: "viewer", name: "x" } }).catch((e: unknown) => ConnectError.from(e));
    expect((builtIn as ConnectError).code).toBe(Code.FailedPrecondition);
    expect((builtIn as ConnectError).findDetails(PreconditionFailureSchema)[0]?.violations[0]?.type).toBe("BUILT_IN_ROLE");
    const bad = await client
      .createRole({ parent: uidOf(org), role: { name: "d", capabilities: ["x.y"] } })
      .catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations[0]).toMatchObject({ field: "capabilities[0]" });
  });
});
