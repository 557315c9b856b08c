import grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { randomBytes } from "node:crypto";
import { sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/platform/iam/v2beta1/identities_pb.js";
import { RoleBindingsService } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { queryRows, schema } from "../../src/db/index.js";
import { connectClient, grpcStatusDetails, restClient, type JsonObject, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import {
  TIMESTAMP,
  bind,
  bootstrapIdentityUid,
  createGroup,
  createIdentity,
  createRole,
  expectInvalid,
  expectPrecondition,
  ok,
  restDetail,
  uidOf,
} from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

const VIEWER_DESCRIPTION = "Read access to everything: every list and get.";

let server: TestServer;
let call: RestClient;

let home = "";

beforeAll(async () => {
  server = await sharedServer();
  call = restClient(server.url, server.token);
  // The suite's "organizations" live under one root group, so the owner
  // binding that creating a root group gives its creator stays out of them.
  home = uidOf(await createGroup(call, "role-bindings-suite", home));
});

/** A root group with an identity in it. */
async function orgWithIdentity(name: string): Promise<{ org: JsonObject; identity: JsonObject }> {
  const org = await createGroup(call, name, home);
  const identity = await createIdentity(call, uidOf(org), {
    name: `${name}-robot`,
    description: "ci",
    claimMatch: { issuer: "https://token.actions.githubusercontent.com", subject: `repo:${name}/app:ref:refs/heads/main` },
  });
  return { org, identity };
}

async function listBindings(query: string): Promise<{ uids: string[]; body: JsonObject }> {
  const body = await ok(call("GET", `/iam/v2beta1/roleBindings?${query}`));
  return { uids: (body["roleBindings"] as JsonObject[]).map(uidOf), body };
}

describe("role bindings over REST", () => {
  it("binds the built-in viewer role and returns the hydrated binding", async () => {
    const org = await createGroup(call, "must-show", home);
    await ok(call("PATCH", `/iam/v2beta1/groups/${uidOf(org)}`, { description: "the org" }));
    const identity = await createIdentity(call, uidOf(org), {
      name: "deployer",
      description: "deploys",
      claimMatch: { issuer: "https://issuer.example", subject: "system:deployer" },
    });
    const res = await bind(call, uidOf(org), uidOf(identity), "viewer");
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const binding = res.body;
    expect(uidOf(binding)).toMatch(new RegExp(`^${uidOf(org)}/[0-9a-f]{16}$`));
    expect(binding).toEqual({
      uid: uidOf(binding),
      identity: {
        uid: uidOf(identity),
        name: "deployer",
        description: "deploys",
        subject: "system:deployer",
        issuer: "https://issuer.example",
      },
      group: { uid: uidOf(org), name: "must-show", description: "the org" },
      role: { uid: "viewer", name: "viewer", description: VIEWER_DESCRIPTION },
      createTime: binding["createTime"],
      // The create request's fields, beside the hydrated objects.
      roleUid: "viewer",
      identityUid: uidOf(identity),
    });
    expect(binding["createTime"]).toMatch(TIMESTAMP);
    expect(binding).not.toHaveProperty("updateTime");

    expect(await ok(call("GET", `/iam/v2beta1/roleBindings/${uidOf(binding)}`))).toEqual(binding);
    const { body } = await listBindings(`group=${uidOf(org)}`);
    expect(body).toEqual({ roleBindings: [binding], nextPageToken: "", totalCount: "1", skipped: 0 });
  });

  it("hydrates every row of a multi-row page", async () => {
    const org = await createGroup(call, "hydrated-page", home);
    const team = await createGroup(call, "team", uidOf(org));
    const custom = await createRole(call, uidOf(org), { name: "auditor", description: "audits", capabilities: ["repo.list"] });
    const ids: JsonObject[] = [];
    for (let n = 0; n < 4; n++) {
      ids.push(
        await createIdentity(call, uidOf(org), {
          name: `id-${n}`,
          description: `d${n}`,
          claimMatch: { issuer: `https://i${n}`, subject: `s${n}` },
        }),
      );
    }
    const plan: [JsonObject, JsonObject, string][] = [
      [org, ids[0]!, "viewer"],
      [org, ids[1]!, uidOf(custom)],
      [team, ids[2]!, "editor"],
      [team, ids[3]!, uidOf(custom)],
      [team, ids[0]!, "registry.push"],
    ];
    const expected: JsonObject[] = [];
    for (const [group, identity, role] of plan) {
      server.clock.advance(1000);
      const b = await ok(bind(call, uidOf(group), uidOf(identity), role));
      expected.push(b);
      expect(b["group"]).toEqual({ uid: uidOf(group), name: group["name"], description: "" });
      expect(b["identity"]).toEqual({
        uid: uidOf(identity),
        name: identity["name"],
        description: identity["description"],
        subject: (identity["claimMatch"] as JsonObject)["subject"],
        issuer: (identity["claimMatch"] as JsonObject)["issuer"],
      });
      expect((b["role"] as JsonObject)["uid"]).toBe(role);
    }
    expect(expected[1]!["role"] as JsonObject).toEqual({ uid: uidOf(custom), name: "auditor", description: "audits" });

    const { body } = await listBindings(`uidp.in_root=${uidOf(org)}&order_by=create_time`);
    expect(body["roleBindings"]).toEqual(expected);
    expect(body["totalCount"]).toBe("5");
    const desc = await listBindings(`uidp.in_root=${uidOf(org)}&order_by=created_at%20desc`);
    expect(desc.body["roleBindings"]).toEqual([...expected].reverse());

    // Paging keeps the hydration and the order.
    const first = await listBindings(`uidp.in_root=${uidOf(org)}&order_by=create_time&page_size=2`);
    expect(first.body["roleBindings"]).toEqual(expected.slice(0, 2));
    const token = encodeURIComponent(first.body["nextPageToken"] as string);
    const second = await listBindings(`uidp.in_root=${uidOf(org)}&order_by=create_time&page_size=2&page_token=${token}`);
    expect(second.body["roleBindings"]).toEqual(expected.slice(2, 4));
    const skipped = await listBindings(`uidp.in_root=${uidOf(org)}&order_by=create_time&page_size=2&skip=4`);
    expect(skipped.body).toMatchObject({ roleBindings: expected.slice(4), skipped: 4, nextPageToken: "" });

    // identity, group and role filters, alone and combined, and the scopes.
    const uidsOf = (idx: number[]) => idx.map((i) => uidOf(expected[i]!)).sort();
    expect((await listBindings(`identity=${uidOf(ids[0]!)}`)).uids.sort()).toEqual(uidsOf([0, 4]));
    expect((await listBindings(`group=${uidOf(team)}`)).uids.sort()).toEqual(uidsOf([2, 3, 4]));
    expect((await listBindings(`role=${uidOf(custom)}`)).uids.sort()).toEqual(uidsOf([1, 3]));
    expect((await listBindings(`role=${uidOf(custom)}&group=${uidOf(team)}`)).uids).toEqual(uidsOf([3]));
    expect((await listBindings(`identity=${uidOf(ids[0]!)}&role=viewer`)).uids).toEqual(uidsOf([0]));
    expect((await listBindings(`uidp.children_of=${uidOf(org)}`)).uids.sort()).toEqual(uidsOf([0, 1]));
    expect((await listBindings(`uidp.descendants_of=${uidOf(org)}`)).uids.sort()).toEqual(uidsOf([0, 1, 2, 3, 4]));
    // A filter that cannot be a role uid is refused before any query.
    expectInvalid(await call("GET", "/iam/v2beta1/roleBindings?role=nope"), "role");

    // A token is bound to its filters.
    const filtered = await listBindings(`role=${uidOf(custom)}&page_size=1`);
    const reuse = await call(
      "GET",
      `/iam/v2beta1/roleBindings?role=viewer&page_size=1&page_token=${encodeURIComponent(filtered.body["nextPageToken"] as string)}`,
    );
    expectInvalid(reuse, "page_token");
    // Bindings have no name: order_by name is refused, and so is a name filter.
    expectInvalid(await call("GET", "/iam/v2beta1/roleBindings?order_by=name"), "order_by");
    expect((await call("GET", "/iam/v2beta1/roleBindings?name=x")).status).toBe(400);
  });

  it("changes the role with PATCH, with and without an update mask", async () => {
    const { org, identity } = await orgWithIdentity("patch-role");
    const b = await ok(bind(call, uidOf(org), uidOf(identity), "viewer"));
    const path = `/iam/v2beta1/roleBindings/${uidOf(b)}`;

    const editor = await ok(call("PATCH", path, { roleUid: "editor" }));
    expect(editor).toEqual({ ...b, role: { uid: "editor", name: "editor", description: expect.any(String) }, roleUid: "editor" });

    // With a mask, only role_uid counts; echoed output-only fields are ignored.
    const owner = await ok(call("PATCH", `${path}?updateMask=role_uid`, { ...editor, roleUid: "owner" }));
    expect((owner["role"] as JsonObject)["uid"]).toBe("owner");
    expect(owner["createTime"]).toBe(b["createTime"]);
    expect(await ok(call("GET", path))).toEqual(owner);

    // Without role_uid nothing changes.
    expect(await ok(call("PATCH", path, {}))).toEqual(owner);

    // Nothing but the role can change.
    // identityUid is output only: echoed (or not) it changes nothing, and no mask may name it.
    const other = await createIdentity(call, uidOf(org), { name: "other" });
    expect(await ok(call("PATCH", path, { identityUid: uidOf(other) }))).toEqual(owner);
    expectInvalid(await call("PATCH", `${path}?updateMask=identity_uid`, {}), "update_mask");
    expectInvalid(await call("PATCH", `${path}?updateMask=identity`, {}), "update_mask");
    expectInvalid(await call("PATCH", path, { roleUid: "" }), "role_uid");
    expectInvalid(await call("PATCH", path, { roleUid: "no-such-role" }), "role_uid");
    const sibling = await createGroup(call, "patch-sibling", home);
    const foreign = await createRole(call, uidOf(sibling), { name: "foreign", capabilities: [] });
    expect(expectInvalid(await call("PATCH", path, { roleUid: uidOf(foreign) }), "role_uid")).toContain("not visible from group");
    expectInvalid(await call("PATCH", "/iam/v2beta1/roleBindings/nope/0000000000000000", { roleUid: "viewer" }), "uid");
    expect((await call("PATCH", `/iam/v2beta1/roleBindings/${uidOf(org)}/0000000000000000`, { roleUid: "viewer" })).status).toBe(404);

    // Changing to a role the identity already has at the group collides.
    await ok(bind(call, uidOf(org), uidOf(identity), "viewer"));
    const dup = await call("PATCH", path, { roleUid: "viewer" });
    expect(dup.status).toBe(409);
    expect(dup.body["code"]).toBe(6);
  });

  it("deletes a binding", async () => {
    const { org, identity } = await orgWithIdentity("delete-binding");
    const b = await ok(bind(call, uidOf(org), uidOf(identity), "viewer"));
    expect(await ok(call("DELETE", `/iam/v2beta1/roleBindings/${uidOf(b)}`))).toEqual({});
    const gone = await call("GET", `/iam/v2beta1/roleBindings/${uidOf(b)}`);
    expect(gone.status).toBe(404);
    expect(restDetail(gone, "ResourceInfo")).toMatchObject({ resourceType: "role binding", resourceName: uidOf(b) });
    expect((await call("DELETE", `/iam/v2beta1/roleBindings/${uidOf(b)}`)).status).toBe(404);
  });

  it("refuses a duplicate binding with 409", async () => {
    const { org, identity } = await orgWithIdentity("dup-binding");
    await ok(bind(call, uidOf(org), uidOf(identity), "viewer"));
    const dup = await bind(call, uidOf(org), uidOf(identity), "viewer");
    expect(dup.status).toBe(409);
    expect(dup.body["code"]).toBe(6);
    expect(restDetail(dup, "ErrorInfo")).toMatchObject({ reason: "ALREADY_EXISTS" });
    // Another role, or the same role at another group, is a different binding.
    await ok(bind(call, uidOf(org), uidOf(identity), "editor"));
    const child = await createGroup(call, "child", uidOf(org));
    await ok(bind(call, uidOf(child), uidOf(identity), "viewer"));
  });

  it("validates the identity and the role: present, existing, visible from the group", async () => {
    const org = await createGroup(call, "visibility", home);
    const team = await createGroup(call, "team", uidOf(org));
    const sibling = await createGroup(call, "sibling", uidOf(org));
    const orgIdentity = await createIdentity(call, uidOf(org), { name: "org-id" });
    const teamIdentity = await createIdentity(call, uidOf(team), { name: "team-id" });
    const siblingIdentity = await createIdentity(call, uidOf(sibling), { name: "sibling-id" });
    const orgRole = await createRole(call, uidOf(org), { name: "org-role", capabilities: ["repo.list"] });
    const siblingRole = await createRole(call, uidOf(sibling), { name: "sibling-role", capabilities: ["repo.list"] });

    // Held by the group or above it: visible.
    await ok(bind(call, uidOf(team), uidOf(orgIdentity), uidOf(orgRole)));
    await ok(bind(call, uidOf(team), uidOf(teamIdentity), uidOf(orgRole)));
    // Below the group, or beside it: not.
    expect(expectInvalid(await bind(call, uidOf(org), uidOf(teamIdentity), "viewer"), "identity_uid")).toBe(
      `identity ${uidOf(teamIdentity)} is not visible from group ${uidOf(org)}: it belongs to group ${uidOf(team)}`,
    );
    expect(expectInvalid(await bind(call, uidOf(team), uidOf(siblingIdentity), "viewer"), "identity_uid")).toContain(
      "not visible from group",
    );
    expect(expectInvalid(await bind(call, uidOf(team), uidOf(teamIdentity), uidOf(siblingRole)), "role_uid")).toBe(
      `role ${uidOf(siblingRole)} is not visible from group ${uidOf(team)}: it belongs to group ${uidOf(sibling)}`,
    );
    // Missing references are INVALID_ARGUMENT on the field: the binding is what is being created.
    expect(expectInvalid(await bind(call, uidOf(team), `${uidOf(team)}/0000000000000000`, "viewer"), "identity_uid")).toContain(
      "does not exist",
    );
    expect(expectInvalid(await bind(call, uidOf(team), uidOf(teamIdentity), "superuser"), "role_uid")).toBe("is not a valid role uid");
    expectInvalid(await call("POST", `/iam/v2beta1/roleBindings/${uidOf(team)}`, { roleUid: "viewer" }), "identity_uid");
    expectInvalid(await call("POST", `/iam/v2beta1/roleBindings/${uidOf(team)}`, { identityUid: uidOf(teamIdentity) }), "role_uid");
    expectInvalid(await call("POST", `/iam/v2beta1/roleBindings/${uidOf(team)}`, { identityUid: 5 }), "identityUid");
    // The group in the path is the parent: missing is NOT_FOUND.
    const missing = await bind(call, "f".repeat(40), uidOf(orgIdentity), "viewer");
    expect(missing.status).toBe(404);
    expect(restDetail(missing, "ResourceInfo")).toMatchObject({ resourceType: "group", resourceName: "f".repeat(40) });
    // The bootstrap identity (no group) is visible everywhere.
    const bootstrapUid = bootstrapIdentityUid(server.token);
    const boot = await ok(bind(call, uidOf(team), bootstrapUid, "owner"));
    expect((boot["identity"] as JsonObject)["name"]).toBe("bootstrap");
  });

  it("batch-creates all or nothing", async () => {
    const { org, identity } = await orgWithIdentity("batch");
    const other = await createIdentity(call, uidOf(org), { name: "other" });
    const url = `/iam/v2beta1/roleBindings/${uidOf(org)}:batchCreate`;
    const created = await ok(
      call("POST", url, {
        requests: [
          { identityUid: uidOf(identity), roleUid: "viewer" },
          { identityUid: uidOf(other), roleUid: "registry.pull", parent: uidOf(org) },
          { identityUid: uidOf(other), roleUid: "editor" },
        ],
      }),
    );
    const bindings = created["roleBindings"] as JsonObject[];
    expect(bindings.map((b) => [(b["identity"] as JsonObject)["uid"], (b["role"] as JsonObject)["uid"]])).toEqual([
      [uidOf(identity), "viewer"],
      [uidOf(other), "registry.pull"],
      [uidOf(other), "editor"],
    ]);
    for (const b of bindings) {
      expect(b["group"]).toEqual({ uid: uidOf(org), name: "batch", description: "" });
      expect(await ok(call("GET", `/iam/v2beta1/roleBindings/${uidOf(b)}`))).toEqual(b);
    }
    const count = async () => (await listBindings(`group=${uidOf(org)}`)).body["totalCount"];
    expect(await count()).toBe("3");

    // One bad entry and nothing is created.
    const bad = await call("POST", url, {
      requests: [
        { identityUid: uidOf(identity), roleUid: "owner" },
        { identityUid: uidOf(identity), roleUid: "no-such-role" },
      ],
    });
    expect(expectInvalid(bad, "requests[1].role_uid")).toBe("is not a valid role uid");
    expect(await count()).toBe("3");
    // A duplicate (of an existing binding or within the batch) and nothing is created.
    const dupExisting = await call("POST", url, {
      requests: [
        { identityUid: uidOf(identity), roleUid: "owner" },
        { identityUid: uidOf(identity), roleUid: "viewer" },
      ],
    });
    expect(dupExisting.status).toBe(409);
    const dupWithin = await call("POST", url, {
      requests: [
        { identityUid: uidOf(identity), roleUid: "owner" },
        { identityUid: uidOf(identity), roleUid: "owner" },
      ],
    });
    expect(dupWithin.status).toBe(409);
    expect(await count()).toBe("3");

    expectInvalid(
      await call("POST", url, { requests: [{ identityUid: uidOf(identity), roleUid: "owner", parent: "x" }] }),
      "requests[0].parent",
    );
    expectInvalid(await call("POST", url, { requests: [{ identityUid: "", roleUid: "owner" }] }), "requests[0].identity_uid");
    expectInvalid(await call("POST", url, { requests: [] }), "requests");
    expectInvalid(await call("POST", url, {}), "requests");
    const tooMany = Array.from({ length: 201 }, () => ({ identityUid: uidOf(identity), roleUid: "owner" }));
    expectInvalid(await call("POST", url, { requests: tooMany }), "requests");
    expect(await count()).toBe("3");
  });

  it("deleting an identity deletes its role bindings", async () => {
    const { org, identity } = await orgWithIdentity("cascade");
    const keep = await createIdentity(call, uidOf(org), { name: "keep" });
    const team = await createGroup(call, "team", uidOf(org));
    await ok(bind(call, uidOf(org), uidOf(identity), "viewer"));
    await ok(bind(call, uidOf(team), uidOf(identity), "editor"));
    const kept = await ok(bind(call, uidOf(org), uidOf(keep), "viewer"));
    expect((await listBindings(`identity=${uidOf(identity)}`)).uids).toHaveLength(2);

    await ok(call("DELETE", `/iam/v2beta1/identities/${uidOf(identity)}`));
    expect((await listBindings(`identity=${uidOf(identity)}`)).body).toMatchObject({ roleBindings: [], totalCount: "0" });
    expect((await listBindings(`uidp.in_root=${uidOf(org)}`)).uids).toEqual([uidOf(kept)]);
    // The group that held only the deleted identity's binding is empty again.
    await ok(call("DELETE", `/iam/v2beta1/groups/${uidOf(team)}`));
  });

  it("refuses to delete a bound custom role, naming the number of bindings", async () => {
    const { org, identity } = await orgWithIdentity("bound-role");
    const other = await createIdentity(call, uidOf(org), { name: "other" });
    const role = await createRole(call, uidOf(org), { name: "pusher", capabilities: ["repo.create"] });
    const b1 = await ok(bind(call, uidOf(org), uidOf(identity), uidOf(role)));
    const b2 = await ok(bind(call, uidOf(org), uidOf(other), uidOf(role)));

    const refused = await call("DELETE", `/iam/v2beta1/roles/${uidOf(role)}`);
    expect(expectPrecondition(refused, "RESOURCE_IN_USE")).toBe(`role ${uidOf(role)} is used by 2 role bindings; delete them first`);
    expect(refused.body["message"]).toBe(`Precondition failed: role ${uidOf(role)} is used by 2 role bindings; delete them first`);

    await ok(call("DELETE", `/iam/v2beta1/roleBindings/${uidOf(b1)}`));
    expect(expectPrecondition(await call("DELETE", `/iam/v2beta1/roles/${uidOf(role)}`), "RESOURCE_IN_USE")).toContain("1 role binding;");
    await ok(call("DELETE", `/iam/v2beta1/roleBindings/${uidOf(b2)}`));
    await ok(call("DELETE", `/iam/v2beta1/roles/${uidOf(role)}`));
    expect((await call("GET", `/iam/v2beta1/roles/${uidOf(role)}`)).status).toBe(404);
  });

  it("a group holding a role or an identity is not empty; its role bindings go with it", async () => {
    const { org, identity } = await orgWithIdentity("holder");
    const team = await createGroup(call, "team", uidOf(org));
    const b = await ok(bind(call, uidOf(team), uidOf(identity), "viewer"));

    const role = await createRole(call, uidOf(team), { name: "r", capabilities: [] });
    expect(expectPrecondition(await call("DELETE", `/iam/v2beta1/groups/${uidOf(team)}`), "RESOURCE_NOT_EMPTY")).toContain("roles");
    await ok(call("DELETE", `/iam/v2beta1/roles/${uidOf(role)}`));

    const teamIdentity = await createIdentity(call, uidOf(team), { name: "i" });
    expect(expectPrecondition(await call("DELETE", `/iam/v2beta1/groups/${uidOf(team)}`), "RESOURCE_NOT_EMPTY")).toContain("identities");
    await ok(call("DELETE", `/iam/v2beta1/identities/${uidOf(teamIdentity)}`));
    await ok(call("DELETE", `/iam/v2beta1/groups/${uidOf(team)}`));
    expect((await call("GET", `/iam/v2beta1/roleBindings/${uidOf(b)}`)).status).toBe(404);
    expect(await danglingBindings()).toBe(0);
  });
});

/** Bindings whose identity, group or role is missing: must always be none. */
async function danglingBindings(): Promise<number> {
  const rows = await queryRows<{ n: number | string }>(
    server.app.database.db,
    sql`select count(*) as n from role_bindings b
        left join identities i on i.uid = b.identity_uid
        left join groups g on g.uid = b.parent_uid
        left join roles r on r.uid = b.role_uid
        where i.uid is null or g.uid is null or r.uid is null`,
  );
  return Number(rows[0]?.n);
}

describe("binding people (root-level identities)", () => {
  /** A person as browser sign-in makes one: root-level, with a name, issuer and subject of their own. */
  async function person(name: string): Promise<string> {
    const uid = randomBytes(8).toString("hex");
    const now = server.clock.now();
    await server.app.database.db.insert(schema.identities).values({
      uid,
      parentUid: null,
      name,
      claimIssuer: "https://people.example",
      claimSubject: `${name}-subject`,
      createTime: now,
      updateTime: now,
    });
    return uid;
  }

  /** An organization (under the suite's home) with a workload identity as its owner, and that owner's client. */
  async function ownedOrg(name: string): Promise<{ org: string; owner: RestClient }> {
    const org = uidOf(await createGroup(call, name, home));
    const robot = uidOf(await createIdentity(call, org, { name: `${name}-owner` }));
    await ok(bind(call, org, robot, "owner"));
    const token = (await server.app.tokens.mint(robot, server.app.urls.baseUrl)).token;
    return { org, owner: restClient(server.url, token) };
  }

  it("an owner cannot bind a person who holds nothing in the organization, nor learn who they are", async () => {
    const { org, owner } = await ownedOrg("stranger-org");
    const stranger = await person("stranger");
    // In another organization, the stranger is somebody.
    const other = uidOf(await createGroup(call, "strangers-home"));
    await ok(bind(call, other, stranger, "viewer"));

    const refused = await bind(owner, org, stranger, "viewer");
    const description = expectPrecondition(refused, "NOT_IN_ORGANIZATION");
    expect(description).toContain("invite");
    expect(JSON.stringify(refused.body)).not.toMatch(/stranger-subject|people\.example|"stranger"/);
    // A uid that names nobody gets the very same answer: the refusal tells nothing about strangers.
    const nobody = randomBytes(8).toString("hex");
    const unknown = await bind(owner, org, nobody, "viewer");
    expect(expectPrecondition(unknown, "NOT_IN_ORGANIZATION")).toBe(description.replace(stranger, nobody));
    // Nor in a batch, nor at a group below.
    const team = uidOf(await createGroup(owner, "team", org));
    const batch = await owner("POST", `/iam/v2beta1/roleBindings/${team}:batchCreate`, {
      requests: [{ identityUid: stranger, roleUid: "viewer" }],
    });
    expect(expectPrecondition(batch, "NOT_IN_ORGANIZATION")).toContain("requests[0].identity_uid");
    expect((await listBindings(`identity=${stranger}`)).uids).toHaveLength(1);
  });

  it("a person already in the organization stays bindable anywhere in it, hydrated", async () => {
    const { org, owner } = await ownedOrg("member-org");
    const team = uidOf(await createGroup(owner, "team", org));
    const member = await person("member");
    // They came in at the team (as an invite or the organization's provider would bind them).
    await ok(bind(call, team, member, "viewer"));
    const binding = await ok(bind(owner, org, member, "editor"));
    expect(binding["identity"]).toEqual({
      uid: member,
      name: "member",
      description: "",
      subject: "member-subject",
      issuer: "https://people.example",
    });
  });

  it("a platform administrator may bind any person", async () => {
    const org = uidOf(await createGroup(call, "admin-binds", home));
    await ok(bind(call, org, await person("provisioned"), "viewer"));
  });
});

describe("role bindings under concurrent deletes", () => {
  // Creates race deletes of what they reference; every create either commits
  // (and the delete then takes the binding along, or refuses) or is refused
  // because the reference vanished. Never a 500, never a dangling binding.
  // Odd rounds start the deletes up to 9 ms after the creates, even rounds the
  // other way round, to vary the interleaving. Which side wins a round is the
  // scheduler's choice, so only what must hold either way is asserted.
  const after = <T>(ms: number, f: () => Promise<T>) => new Promise((r) => setTimeout(r, ms)).then(f);
  const delays = (round: number) => (round % 2 ? { create: 0, remove: round % 10 } : { create: round % 10, remove: 0 });

  it("identity and role deletes racing binding creates", async () => {
    const org = await createGroup(call, "race", home);
    for (let round = 0; round < 20; round++) {
      const identity = await createIdentity(call, uidOf(org), { name: `racer-${round}` });
      const role = await createRole(call, uidOf(org), { name: `role-${round}`, capabilities: ["repo.list"] });
      const [b1, b2, delIdentity, b3, delRole, batch] = await Promise.all([
        after(delays(round).create, () => bind(call, uidOf(org), uidOf(identity), "viewer")),
        after(delays(round).create, () => bind(call, uidOf(org), uidOf(identity), uidOf(role))),
        after(delays(round).remove, () => call("DELETE", `/iam/v2beta1/identities/${uidOf(identity)}`)),
        after(delays(round).create, () => bind(call, uidOf(org), uidOf(identity), "editor")),
        after(delays(round).remove, () => call("DELETE", `/iam/v2beta1/roles/${uidOf(role)}`)),
        after(delays(round).create, () =>
          call("POST", `/iam/v2beta1/roleBindings/${uidOf(org)}:batchCreate`, {
            requests: [{ identityUid: uidOf(identity), roleUid: "owner" }],
          }),
        ),
      ]);
      for (const res of [b1!, b2!, b3!, batch!]) {
        expect([200, 400], JSON.stringify(res.body)).toContain(res.status);
        if (res.status === 400) expect(res.body["code"]).toBe(3);
      }
      // The identity delete always succeeds: it waits for the creates, then takes their bindings along.
      expect(delIdentity!.status, JSON.stringify(delIdentity!.body)).toBe(200);
      // The role delete succeeds, or is refused because a binding was created first (and not yet cascaded).
      expect([200, 400], JSON.stringify(delRole!.body)).toContain(delRole!.status);
      if (delRole!.status === 400) expect(delRole!.body["code"]).toBe(9);

      expect((await listBindings(`identity=${uidOf(identity)}`)).body["totalCount"]).toBe("0");
      expect(await danglingBindings()).toBe(0);
    }
  });

  it("group deletes racing binding creates", async () => {
    const org = await createGroup(call, "race-groups", home);
    const identity = await createIdentity(call, uidOf(org), { name: "racer" });
    for (let round = 0; round < 20; round++) {
      const team = await createGroup(call, `team-${round}`, uidOf(org));
      const [b1, delGroup, b2] = await Promise.all([
        after(delays(round).create, () => bind(call, uidOf(team), uidOf(identity), "viewer")),
        after(delays(round).remove, () => call("DELETE", `/iam/v2beta1/groups/${uidOf(team)}`)),
        after(delays(round).create, () => bind(call, uidOf(team), uidOf(identity), "editor")),
      ]);
      for (const res of [b1!, b2!]) {
        // Created, or the group was gone (NOT_FOUND: the group is the parent).
        expect([200, 404], JSON.stringify(res.body)).toContain(res.status);
        if (res.status === 404) expect(res.body["code"]).toBe(5);
      }
      // Bindings go with their group: the delete always wins, and a binding
      // either was created before it (and went with the group) or found no group.
      expect(delGroup!.status, JSON.stringify(delGroup!.body)).toBe(200);
      for (const res of [b1!, b2!]) {
        if (res.status === 200) expect((await call("GET", `/iam/v2beta1/roleBindings/${uidOf(res.body)}`)).status).toBe(404);
      }
      expect(await danglingBindings()).toBe(0);
    }
  });
});

describe("role bindings over gRPC (@grpc/grpc-js)", () => {
  interface BindingMsg {
    uid: string;
    identity: { uid: string; name: string; description: string; subject: string; issuer: string } | null;
    group: { uid: string; name: string; description: string } | null;
    role: { uid: string; name: string; description: string } | null;
    create_time: { seconds: string; nanos: number } | null;
  }
  const { rpc, failure } = grpcSuite(() => server, "platform.iam.v2beta1.RoleBindingsService", "platform/iam/v2beta1/role_bindings.proto");

  it("creates, gets, lists, batch-creates, updates and deletes", async () => {
    const { org, identity } = await orgWithIdentity("grpc-bindings");
    const b = await rpc<BindingMsg>("CreateRoleBinding", { parent: uidOf(org), identity_uid: uidOf(identity), role_uid: "viewer" });
    expect(b.identity).toMatchObject({
      uid: uidOf(identity),
      name: "grpc-bindings-robot",
      issuer: "https://token.actions.githubusercontent.com",
    });
    expect(b.group).toEqual({ uid: uidOf(org), name: "grpc-bindings", description: "" });
    expect(b.role).toMatchObject({ uid: "viewer", name: "viewer" });
    expect(b.create_time?.seconds).toMatch(/^\d+$/);
    expect(await rpc<BindingMsg>("GetRoleBinding", { uid: b.uid })).toEqual(b);

    const batch = await rpc<{ role_bindings: BindingMsg[] }>("BatchCreateRoleBindings", {
      parent: uidOf(org),
      requests: [{ identity_uid: uidOf(identity), role_uid: "registry.pull" }],
    });
    expect(batch.role_bindings.map((x) => x.role?.uid)).toEqual(["registry.pull"]);

    const list = await rpc<{ role_bindings: BindingMsg[]; total_count: string }>("ListRoleBindings", {
      group: uidOf(org),
      order_by: "create_time",
    });
    expect(list.total_count).toBe("2");
    expect(list.role_bindings.map((x) => x.uid).sort()).toEqual([b.uid, batch.role_bindings[0]!.uid].sort());
    expect(list.role_bindings.every((x) => x.identity?.uid === uidOf(identity) && x.group?.uid === uidOf(org))).toBe(true);

    // Without a mask gRPC changes the set fields: role_uid.
    const updated = await rpc<BindingMsg>("UpdateRoleBinding", { role_binding: { uid: b.uid, role_uid: "editor" } });
    expect(updated.role?.uid).toBe("editor");
    const masked = await rpc<BindingMsg>("UpdateRoleBinding", {
      role_binding: { uid: b.uid, role_uid: "owner" },
      update_mask: { paths: ["role_uid"] },
    });
    expect(masked.role?.uid).toBe("owner");

    await rpc("DeleteRoleBinding", { uid: b.uid });
    expect((await failure(rpc("GetRoleBinding", { uid: b.uid }))).code).toBe(grpc.status.NOT_FOUND);
  });

  it("refuses a role that is not visible with typed details", async () => {
    const { org, identity } = await orgWithIdentity("grpc-visibility");
    const other = await createGroup(call, "grpc-other", home);
    const foreign = await createRole(call, uidOf(other), { name: "foreign", capabilities: [] });
    const err = await failure(rpc("CreateRoleBinding", { parent: uidOf(org), identity_uid: uidOf(identity), role_uid: uidOf(foreign) }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = grpcStatusDetails(err);
    expect(status.details.find((d) => d.type === "google.rpc.BadRequest")?.value).toMatchObject({
      fieldViolations: [{ field: "role_uid" }],
    });
    expect(status.details.find((d) => d.type === "google.rpc.ErrorInfo")?.value).toMatchObject({ reason: "INVALID_ARGUMENT" });
  });
});

describe("role bindings over Connect", () => {
  it("creates a group, an identity and a viewer binding, hydrated", async () => {
    const groups = connectClient(GroupsService, server.url, server.token);
    const identities = connectClient(IdentitiesService, server.url, server.token);
    const bindings = connectClient(RoleBindingsService, server.url, server.token);
    const org = await groups.createGroup({ group: { name: "connect-bindings", description: "c" } });
    const identity = await identities.createIdentity({
      parent: org.uid,
      identity: { name: "svc", claimMatch: { iss: { case: "issuer", value: "https://i" }, sub: { case: "subject", value: "s" } } },
    });
    const b = await bindings.createRoleBinding({ parent: org.uid, identityUid: identity.uid, roleUid: "viewer" });
    expect(b.identity).toMatchObject({ uid: identity.uid, name: "svc", subject: "s", issuer: "https://i" });
    expect(b.group).toMatchObject({ uid: org.uid, name: "connect-bindings", description: "c" });
    expect(b.role).toMatchObject({ uid: "viewer", name: "viewer", description: VIEWER_DESCRIPTION });
    expect([b.roleUid, b.identityUid]).toEqual(["viewer", identity.uid]);
    const list = await bindings.listRoleBindings({ identity: identity.uid });
    expect(list.roleBindings).toEqual([b]);
    expect(list.totalCount).toBe(1n);

    const err = await bindings
      .createRoleBinding({ parent: org.uid, identityUid: identity.uid, roleUid: "viewer" })
      .catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.AlreadyExists);
    const bad = await bindings
      .batchCreateRoleBindings({ parent: org.uid, requests: [{ identityUid: identity.uid, roleUid: "nope" }] })
      .catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("requests[0].role_uid");
  });
});
