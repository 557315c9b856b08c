import { sql } from "drizzle-orm";
import grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { grpcStatusDetails, restClient, type JsonObject, type JsonValue, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { dottedCapabilities } from "../../src/capabilities/index.js";
import {
  TIMESTAMP,
  bind,
  createGroup,
  createIdentity,
  expectInvalid,
  expectPrecondition,
  ok,
  restDetail,
  uidOf,
} from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

// The v1 API (docs/design.md, "v1 beside v2") beside v2: the same records in the v1 shape.

const GROUP_NAME_RULE = "must match the pattern ^[a-z0-9 ._-]{1,}$";
const DIGEST_A = `sha256:${"a".repeat(64)}`;
const DIGEST_B = `sha256:${"b".repeat(64)}`;

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const get = (path: string) => ok(call("GET", path));
const post = (path: string, body: unknown) => ok(call("POST", path, body));
const put = (path: string, body: unknown) => ok(call("PUT", path, body));
const patch = (path: string, body: unknown) => ok(call("PATCH", path, body));

let orgCount = 0;
const newOrg = async () => uidOf(await createGroup(call, `v1-org-${orgCount++}`));

/** The items of a v1 List, checking the envelope holds nothing else (no paging fields). */
async function items(path: string): Promise<JsonObject[]> {
  const body = await get(path);
  expect(Object.keys(body)).toEqual(["items"]);
  return body["items"] as JsonObject[];
}

/** The one record a v1 List by id returns. */
async function v1One(collection: string, id: string): Promise<JsonObject> {
  const found = await items(`${collection}?id=${encodeURIComponent(id)}`);
  expect(found).toHaveLength(1);
  return found[0]!;
}

const NO_CLAIMS = { issuer: "", subject: "", issuerPattern: "", subjectPattern: "", audience: "", audiencePattern: "" };
const isObject = (v: JsonValue | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

const V1_NAMES: Record<string, string> = { uid: "id", createTime: "createdAt", updateTime: "updatedAt", lastSeenTime: "lastSeenAt" };

/**
 * What v1 must show for a v2 JSON record: uid → id, *Time → *At, a group's
 * resourceLimits as the three integer keys, a binding's hydrated references
 * as ids. Compared with toEqual, so every field and no other.
 */
function v1View(v2: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(v2)) out[V1_NAMES[k] ?? k] = v;
  if ("resourceLimits" in v2) {
    const limits = v2["resourceLimits"] as Record<string, number>;
    out["resourceLimits"] = { clusters: limits["clusters"] ?? 0, idps: limits["idps"] ?? 0, repositories: limits["repositories"] ?? 0 };
  }
  for (const ref of ["identity", "group", "role"]) {
    const r = v2[ref];
    if (r && typeof r === "object" && !Array.isArray(r)) out[ref] = (r as JsonObject)["uid"] as JsonValue;
  }
  // v2 answers a binding's references' uids beside them too; v1's references are those uids.
  delete out["identityUid"];
  delete out["roleUid"];
  // v1's claimMatch has all six fields; v2 answers only the members in use of its three oneofs.
  if (isObject(v2["claimMatch"])) out["claimMatch"] = { ...NO_CLAIMS, ...v2["claimMatch"] };
  // v1 answers capabilities as it always did; v2 as enum names (docs/design.md, "Capability names").
  if (Array.isArray(v2["capabilities"])) out["capabilities"] = dottedCapabilities(v2["capabilities"] as string[]);
  return out;
}

describe("the must-show", () => {
  it("GET /iam/v1/groups?id=<uid> returns {items:[{id, createdAt, …}]} for a group created through v2", async () => {
    const g = await post("/iam/v2beta1/groups", { name: "made-in-v2", description: "from v2" });
    const body = await get(`/iam/v1/groups?id=${uidOf(g)}`);
    expect(body).toEqual({
      items: [
        {
          id: g["uid"],
          name: "made-in-v2",
          description: "from v2",
          resourceLimits: { clusters: 0, idps: 0, repositories: 0 },
          verified: false,
          createdAt: g["createTime"],
          updatedAt: g["updateTime"],
        },
      ],
    });
    expect((body["items"] as JsonObject[])[0]!["createdAt"]).toMatch(TIMESTAMP);
  });

  it("a v1 update resets what it omits while a v2 PATCH keeps it", async () => {
    const org = await newOrg();
    const uid = uidOf(await post(`/iam/v2beta1/groups/${org}`, { name: "team", description: "keep me" }));
    const viaV2 = await patch(`/iam/v2beta1/groups/${uid}`, { name: "team-2" });
    expect(viaV2).toMatchObject({ name: "team-2", description: "keep me" });
    const viaV1 = await put(`/iam/v1/groups/${uid}`, { name: "team-3" });
    expect(viaV1).toMatchObject({ id: uid, name: "team-3", description: "" });
    expect(await get(`/iam/v2beta1/groups/${uid}`)).toMatchObject({ name: "team-3", description: "" });
  });
});

describe("groups in v1", () => {
  it("creates root and child groups; v2 reads them the same", async () => {
    const root = await post("/iam/v1/groups", { name: "v1-root", description: "made in v1" });
    expect(root["id"]).toMatch(/^[0-9a-f]{40}$/);
    expect(Object.keys(root).sort()).toEqual(["createdAt", "description", "id", "name", "resourceLimits", "updatedAt", "verified"]);
    expect(root["createdAt"]).toMatch(TIMESTAMP);
    expect(root).toEqual(v1View(await get(`/iam/v2beta1/groups/${root["id"]}`)));
    const child = await post(`/iam/v1/groups/${root["id"]}`, { name: "v1-child" });
    expect(child["id"]).toMatch(new RegExp(`^${root["id"]}/[0-9a-f]{16}$`));
    expect(child).toEqual(v1View(await get(`/iam/v2beta1/groups/${child["id"]}`)));
    // The creator of a v1 organization is its owner, as in v2.
    const bindings = await items(`/iam/v1/rolebindings?group=${root["id"]}`);
    expect(bindings.map((b) => b["role"])).toEqual(["owner"]);
  });

  it("takes a child's id with its slash percent-encoded (%2F) on every route, as v2 does", async () => {
    const org = await newOrg();
    const enc = (id: unknown): string => encodeURIComponent(String(id));
    const child = await post(`/iam/v1/groups/${enc(org)}`, { name: "v1-enc-child" });
    expect(child["id"]).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    const grandchild = await post(`/iam/v1/groups/${enc(child["id"])}`, { name: "v1-enc-grandchild" });
    expect(grandchild["id"]).toMatch(new RegExp(`^${child["id"]}/[0-9a-f]{16}$`));
    for (const method of ["PUT", "PATCH"]) {
      const updated = await call(method, `/iam/v1/groups/${enc(child["id"])}`, { name: "v1-enc-child", description: method });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      expect(updated.body["description"]).toBe(method);
    }
    expect(await ok(call("DELETE", `/iam/v1/groups/${enc(grandchild["id"])}`))).toEqual({});
    expect((await call("GET", `/iam/v2beta1/groups/${grandchild["id"]}`)).status).toBe(404);
  });

  it("ignores output-only fields in a create body", async () => {
    const g = await post("/iam/v1/groups", { name: "sneaky", id: "x", verified: true, createdAt: "2001-01-01T00:00:00Z" });
    expect(g["id"]).toMatch(/^[0-9a-f]{40}$/);
    expect(g["verified"]).toBe(false);
    expect(g["createdAt"]).not.toBe("2001-01-01T00:00:00.000Z");
  });

  it("carries resourceLimits as the integer keys clusters, idps, repositories shared with v2's map", async () => {
    const g = await post("/iam/v1/groups", { name: "limited", resourceLimits: { clusters: 3, idps: 1, repositories: 10 } });
    expect(g["resourceLimits"]).toEqual({ clusters: 3, idps: 1, repositories: 10 });
    expect((await get(`/iam/v2beta1/groups/${g["id"]}`))["resourceLimits"]).toEqual({ clusters: 3, idps: 1, repositories: 10 });
    // Zero is unset: no map entry in v2.
    const none = await post("/iam/v1/groups", { name: "unlimited" });
    expect(none["resourceLimits"]).toEqual({ clusters: 0, idps: 0, repositories: 0 });
    expect((await get(`/iam/v2beta1/groups/${none["id"]}`))["resourceLimits"]).toEqual({});
    // Integers only.
    expectInvalid(
      await call("POST", "/iam/v1/groups", { name: "x", resourceLimits: { clusters: "many" } }),
      "group.resourceLimits.clusters",
    );
    expectInvalid(await call("POST", "/iam/v1/groups", { name: "x", resourceLimits: { gpus: 1 } }), "group.resourceLimits.gpus");
  });

  it("hides other v2 limit keys, and a v1 update (a full replacement) resets them with the omitted ones", async () => {
    const g = await post("/iam/v2beta1/groups", { name: "mixed-limits", resourceLimits: { clusters: 2, repositories: 7, gpus: 4 } });
    expect((await v1One("/iam/v1/groups", uidOf(g)))["resourceLimits"]).toEqual({ clusters: 2, idps: 0, repositories: 7 });
    const updated = await put(`/iam/v1/groups/${uidOf(g)}`, { name: "mixed-limits", resourceLimits: { idps: 5 } });
    expect(updated["resourceLimits"]).toEqual({ clusters: 0, idps: 5, repositories: 0 });
    expect((await get(`/iam/v2beta1/groups/${uidOf(g)}`))["resourceLimits"]).toEqual({ idps: 5 });
  });

  it("PATCH on a v1 path is the same full replacement as PUT", async () => {
    const g = await post("/iam/v1/groups", { name: "patched", description: "d", resourceLimits: { clusters: 1 } });
    const res = await patch(`/iam/v1/groups/${g["id"]}`, { name: "patched" });
    expect(res).toMatchObject({ description: "", resourceLimits: { clusters: 0, idps: 0, repositories: 0 } });
  });

  it("an update needs the required fields again (omitting the name resets it, which is invalid)", async () => {
    const g = await post("/iam/v1/groups", { name: "needs-name", description: "d" });
    const description = expectInvalid(await call("PUT", `/iam/v1/groups/${g["id"]}`, { description: "x" }), "name");
    expect(description).toBe(`is required and ${GROUP_NAME_RULE}`);
    expect(await v1One("/iam/v1/groups", g["id"] as string)).toMatchObject({ name: "needs-name", description: "d" });
  });

  it("updates through v1 bump updatedAt and keep createdAt; v2 agrees", async () => {
    const g = await post("/iam/v1/groups", { name: "clocked" });
    server.clock.advance(5_000);
    const u = await put(`/iam/v1/groups/${g["id"]}`, { name: "clocked", description: "later" });
    expect(u["createdAt"]).toBe(g["createdAt"]);
    expect(Date.parse(u["updatedAt"] as string) - Date.parse(g["updatedAt"] as string)).toBeGreaterThanOrEqual(5_000);
    expect(u).toEqual(v1View(await get(`/iam/v2beta1/groups/${g["id"]}`)));
  });

  it("filters by id, name, uidp.children_of and uidp.descendants_of, ordered by id, without paging fields", async () => {
    const org = await newOrg();
    const a = uidOf(await createGroup(call, "alpha", org));
    const b = uidOf(await createGroup(call, "beta", org));
    const deep = uidOf(await createGroup(call, "alpha", a));
    expect((await items(`/iam/v1/groups?id=${a}`)).map((g) => g["id"])).toEqual([a]);
    expect((await items(`/iam/v1/groups?uidp.children_of=${org}`)).map((g) => g["id"])).toEqual([a, b].sort());
    expect((await items(`/iam/v1/groups?uidp.descendants_of=${org}`)).map((g) => g["id"])).toEqual([a, b, deep].sort());
    expect((await items(`/iam/v1/groups?uidp.descendants_of=${org}&name=alpha`)).map((g) => g["id"])).toEqual([a, deep].sort());
    expect(await items(`/iam/v1/groups?uidp.children_of=${org}&id=${deep}`)).toEqual([]);
    expect(await items(`/iam/v1/groups?id=${org}/0000000000000000`)).toEqual([]);
    // JSON names work as query parameters too.
    expect((await items(`/iam/v1/groups?uidp.childrenOf=${a}`)).map((g) => g["id"])).toEqual([deep]);
  });

  it("refuses id together with uidp.ids, and v2 paging parameters", async () => {
    const org = await newOrg();
    expectInvalid(await call("GET", `/iam/v1/groups?id=${org}&uidp.ids=${org}`), "id");
    expectInvalid(await call("GET", "/iam/v1/groups?page_size=5"), "page_size");
    expectInvalid(await call("GET", "/iam/v1/groups?pageToken=abc"), "pageToken");
  });

  it("returns every match however many pages the v2 List takes", async () => {
    const org = await newOrg();
    await insertChildGroups(org, 450);
    const all = await items(`/iam/v1/groups?uidp.children_of=${org}`);
    expect(all).toHaveLength(450);
    const ids = all.map((g) => g["id"] as string);
    expect(new Set(ids).size).toBe(450);
    expect(ids).toEqual([...ids].sort());
  });

  it("is OUT_OF_RANGE beyond 10 000 matches, telling the caller to narrow the filter or use v2", async () => {
    const org = await newOrg();
    await insertChildGroups(org, 10_001);
    const res = await call("GET", `/iam/v1/groups?uidp.children_of=${org}`);
    expect(res.status).toBe(400);
    expect(res.body["code"]).toBe(11);
    expect(res.body["message"]).toContain("narrow the filter or use the paged v2 List");
    expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "OUT_OF_RANGE", domain: "iam.localhost" });
    // The same filter narrowed is fine, and v2 pages through all of it.
    expect(await items(`/iam/v1/groups?uidp.children_of=${org}&name=bulk-7`)).toHaveLength(1);
    expect((await get(`/iam/v2beta1/groups?uidp.children_of=${org}&page_size=1`))["totalCount"]).toBe("10001");
  });

  it("is OUT_OF_RANGE when the answer would exceed 4 MiB of JSON, however few the matches", async () => {
    // The report: descriptions of control characters (stored before they were refused), each
    // rendered as six bytes. 300 groups of 4096 of them are 7 MiB; 100 are 2.4 MiB.
    const org = await newOrg();
    await insertChildGroups(org, 300, "\u0001".repeat(4096));
    const res = await call("GET", `/iam/v1/groups?uidp.children_of=${org}`);
    expect(res.status).toBe(400);
    expect(res.body["code"]).toBe(11);
    expect(res.body["message"]).toContain(`more than ${4 * 1024 * 1024} bytes`);
    expect(res.body["message"]).toContain("narrow the filter or use the paged v2 List");
    expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "OUT_OF_RANGE", domain: "iam.localhost" });
    const small = await newOrg();
    await insertChildGroups(small, 100, "\u0001".repeat(4096));
    expect(await items(`/iam/v1/groups?uidp.children_of=${small}`)).toHaveLength(100);
  });

  it("rejects a bad name with INVALID_ARGUMENT on name stating the pattern", async () => {
    for (const [body, rule] of [
      [{}, `is required and ${GROUP_NAME_RULE}`],
      [{ name: "UPPER" }, GROUP_NAME_RULE],
      [{ name: "" }, `is required and ${GROUP_NAME_RULE}`],
    ] as const) {
      const res = await call("POST", "/iam/v1/groups", body);
      expect(expectInvalid(res, "name")).toBe(rule);
      expect(res.body["message"]).toBe(`Invalid argument: name: ${rule}`);
      expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "iam.localhost" });
    }
    expectInvalid(await call("POST", "/iam/v1/groups", { name: "ok", uid: "v2-name" }), "group.uid");
  });

  it("deletes through v1; a group that still holds something is RESOURCE_NOT_EMPTY; a missing one 404", async () => {
    const org = await newOrg();
    const team = uidOf(await createGroup(call, "team", org));
    expectPrecondition(await call("DELETE", `/iam/v1/groups/${org}`), "RESOURCE_NOT_EMPTY");
    expect(await ok(call("DELETE", `/iam/v1/groups/${team}`))).toEqual({});
    expect((await call("GET", `/iam/v2beta1/groups/${team}`)).status).toBe(404);
    const missing = await call("DELETE", `/iam/v1/groups/${team}`);
    expect(missing.status).toBe(404);
    expect(missing.body["code"]).toBe(5);
    const update = await call("PUT", `/iam/v1/groups/${team}`, { name: "gone" });
    expect(update.status).toBe(404);
  });
});

/** Inserts `n` child groups of `org` in one statement (fixtures for the paging and cap tests). */
async function insertChildGroups(org: string, n: number, description = ""): Promise<void> {
  await server.app.database.db.execute(sql`
    insert into groups (uid, parent_uid, name, description, create_time, update_time)
    select ${org} || '/' || lpad(to_hex(i), 16, '0'), ${org}, 'bulk-' || i, ${description}, now(), now()
    from generate_series(1, ${n}::int) as i`);
}

describe("identities in v1", () => {
  // One member of each of v2's pairs, and an empty one that v1 always sends.
  const claims = {
    issuer: "https://issuer.example",
    subject: "",
    issuerPattern: "",
    subjectPattern: "repo:.*",
    audience: "api",
    audiencePattern: "",
  };
  const v2Claims = { issuer: "https://issuer.example", subjectPattern: "repo:.*", audience: "api" };

  it("agree with v2 both ways, field by field", async () => {
    const org = await newOrg();
    const fromV2 = await createIdentity(call, org, { name: "robot", description: "ci", claimMatch: claims });
    const seen = await v1One("/iam/v1/identities", uidOf(fromV2));
    expect(seen).toEqual(v1View(fromV2));
    expect(Object.keys(seen).sort()).toEqual(["claimMatch", "createdAt", "description", "id", "lastSeenAt", "name", "updatedAt"]);

    const fromV1 = await post(`/iam/v1/identities/${org}`, { name: "person", description: "human", claimMatch: claims });
    expect(fromV1["id"]).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(fromV1).toEqual(v1View(await get(`/iam/v2beta1/identities/${fromV1["id"]}`)));
  });

  it("a v1 update resets claimMatch and description when omitted; a v2 PATCH keeps them", async () => {
    const org = await newOrg();
    const uid = uidOf(await createIdentity(call, org, { name: "robot", description: "ci", claimMatch: claims }));
    expect(await patch(`/iam/v2beta1/identities/${uid}`, { name: "robot-2" })).toMatchObject({ description: "ci", claimMatch: v2Claims });
    const replaced = await put(`/iam/v1/identities/${uid}`, { name: "robot-3" });
    const empty = { issuer: "", subject: "", issuerPattern: "", subjectPattern: "", audience: "", audiencePattern: "" };
    expect(replaced).toMatchObject({ name: "robot-3", description: "", claimMatch: empty });
    expect(replaced).toEqual(v1View(await get(`/iam/v2beta1/identities/${uid}`)));
  });

  it("filters by name and scope; deletes; rejects bad input with v2's typed errors", async () => {
    const org = await newOrg();
    const a = uidOf(await createIdentity(call, org, { name: "a" }));
    await createIdentity(call, org, { name: "b" });
    expect((await items(`/iam/v1/identities?uidp.children_of=${org}&name=a`)).map((i) => i["id"])).toEqual([a]);
    expect(await items(`/iam/v1/identities?uidp.children_of=${org}`)).toHaveLength(2);
    expectInvalid(
      await call("POST", `/iam/v1/identities/${org}`, { name: "bad", claimMatch: { subjectPattern: "(" } }),
      "claim_match.subject_pattern",
    );
    expectInvalid(await call("POST", `/iam/v1/identities/${org}`, { description: "no name" }), "name");
    expect(await ok(call("DELETE", `/iam/v1/identities/${a}`))).toEqual({});
    expect(await items(`/iam/v1/identities?id=${a}`)).toEqual([]);
  });
});

describe("roles in v1", () => {
  it("agree with v2 both ways, built-in and custom", async () => {
    const viewer = await v1One("/iam/v1/roles", "viewer");
    expect(viewer).toEqual(v1View(await get("/iam/v2beta1/roles/viewer")));
    expect(viewer["parent"]).toBe("");
    // v1 keeps answering dotted names, whatever v2 answers (docs/design.md, "Capability names").
    expect(viewer["capabilities"]).toContain("groups.list");

    const org = await newOrg();
    const fromV2 = await post(`/iam/v2beta1/roles/${org}`, {
      name: "puller",
      description: "pulls",
      capabilities: ["repo.list", "tag.list"],
    });
    expect(await v1One("/iam/v1/roles", uidOf(fromV2))).toEqual(v1View(fromV2));
    // v1 takes either spelling too.
    const fromV1 = await post(`/iam/v1/roles/${org}`, {
      name: "pusher",
      description: "pushes",
      capabilities: ["CAP_REPO_CREATE", "tag.list"],
    });
    expect(fromV1["id"]).toMatch(/^[0-9a-f]{16}$/);
    expect(fromV1["capabilities"]).toEqual(["repo.create", "tag.list"]);
    expect(fromV1["parent"]).toBe(org);
    expect(fromV1).toEqual(v1View(await get(`/iam/v2beta1/roles/${fromV1["id"]}`)));
    expect((await items(`/iam/v1/roles?uidp.children_of=${org}`)).map((r) => r["name"]).sort()).toEqual(["puller", "pusher"]);
  });

  it("a v1 update replaces capabilities and description; built-ins cannot change", async () => {
    const org = await newOrg();
    const role = await post(`/iam/v2beta1/roles/${org}`, { name: "r", description: "d", capabilities: ["repo.list"] });
    const replaced = await put(`/iam/v1/roles/${uidOf(role)}`, { name: "r" });
    expect(replaced).toMatchObject({ description: "", capabilities: [] });
    expect(replaced).toEqual(v1View(await get(`/iam/v2beta1/roles/${uidOf(role)}`)));
    expectPrecondition(await call("PUT", "/iam/v1/roles/viewer", { name: "viewer" }), "BUILT_IN_ROLE");
    expectInvalid(await call("PUT", `/iam/v1/roles/${uidOf(role)}`, { name: "r", capabilities: ["nope.never"] }), "capabilities[0]");
    expect(await ok(call("DELETE", `/iam/v1/roles/${uidOf(role)}`))).toEqual({});
    expect(await items(`/iam/v1/roles?id=${uidOf(role)}`)).toEqual([]);
  });
});

describe("role bindings in v1 (/iam/v1/rolebindings)", () => {
  it("agree with v2 both ways: identity, group and role as ids, createdAt and no updatedAt", async () => {
    const org = await newOrg();
    const identity = uidOf(await createIdentity(call, org, { name: "member" }));
    const fromV2 = await ok(bind(call, org, identity, "viewer"));
    const seen = await v1One("/iam/v1/rolebindings", uidOf(fromV2));
    expect(seen).toEqual({ id: fromV2["uid"], identity, group: org, role: "viewer", createdAt: fromV2["createTime"] });
    expect(seen).toEqual(v1View(fromV2));

    const fromV1 = await post(`/iam/v1/rolebindings/${org}`, { identity, role: "editor" });
    expect(fromV1).toMatchObject({ identity, group: org, role: "editor" });
    expect(fromV1["id"]).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(fromV1).toEqual(v1View(await get(`/iam/v2beta1/roleBindings/${fromV1["id"]}`)));
    expect((await items(`/iam/v1/rolebindings?identity=${identity}`)).map((b) => b["role"]).sort()).toEqual(["editor", "viewer"]);
    expect((await items(`/iam/v1/rolebindings?identity=${identity}&role=editor`)).map((b) => b["id"])).toEqual([fromV1["id"]]);
  });

  it("an update replaces the role; the role is required and the identity cannot change", async () => {
    const org = await newOrg();
    const identity = uidOf(await createIdentity(call, org, { name: "member" }));
    const other = uidOf(await createIdentity(call, org, { name: "other" }));
    const b = await post(`/iam/v1/rolebindings/${org}`, { identity, role: "viewer" });
    const updated = await put(`/iam/v1/rolebindings/${b["id"]}`, { role: "owner" });
    expect(updated).toEqual({ ...b, role: "owner" });
    expect(await put(`/iam/v1/rolebindings/${b["id"]}`, { identity, role: "editor" })).toMatchObject({ role: "editor" });
    expectInvalid(await call("PUT", `/iam/v1/rolebindings/${b["id"]}`, {}), "role");
    expectInvalid(await call("PUT", `/iam/v1/rolebindings/${b["id"]}`, { identity: other, role: "viewer" }), "identity");
    expect(await v1One("/iam/v1/rolebindings", b["id"] as string)).toMatchObject({ identity, role: "editor" });
  });

  it("names v1 fields in errors and deletes", async () => {
    const org = await newOrg();
    const identity = uidOf(await createIdentity(call, org, { name: "member" }));
    expectInvalid(await call("POST", `/iam/v1/rolebindings/${org}`, { identity: `${org}/0000000000000000`, role: "viewer" }), "identity");
    expectInvalid(await call("POST", `/iam/v1/rolebindings/${org}`, { identity, role: "no-such-role" }), "role");
    const b = await post(`/iam/v1/rolebindings/${org}`, { identity, role: "viewer" });
    const dup = await call("POST", `/iam/v1/rolebindings/${org}`, { identity, role: "viewer" });
    expect(dup.status).toBe(409);
    expect(await ok(call("DELETE", `/iam/v1/rolebindings/${b["id"]}`))).toEqual({});
    expect(await items(`/iam/v1/rolebindings?id=${b["id"]}`)).toEqual([]);
  });
});

describe("repos in v1", () => {
  it("agree with v2 both ways, activeTags included", async () => {
    const org = await newOrg();
    const fromV2 = await post(`/registry/v2beta1/repos/${org}`, { name: "library/nginx", description: "web", aliases: ["nginx"] });
    await post(`/registry/v2beta1/tags/${uidOf(fromV2)}`, { name: "latest", digest: DIGEST_A });
    const seen = await v1One("/registry/v1/repos", uidOf(fromV2));
    expect(seen["activeTags"]).toEqual(["latest"]);
    expect(seen).toEqual(v1View(await get(`/registry/v2beta1/repos/${uidOf(fromV2)}`)));
    expect(Object.keys(seen).sort()).toEqual(["activeTags", "aliases", "createdAt", "description", "id", "name", "updatedAt"]);

    const fromV1 = await post(`/registry/v1/repos/${org}`, { name: "library/redis", description: "cache", aliases: ["redis"] });
    expect(fromV1).toEqual(v1View(await get(`/registry/v2beta1/repos/${fromV1["id"]}`)));
    expect((await items(`/registry/v1/repos?uidp.children_of=${org}&name=library/redis`)).map((r) => r["id"])).toEqual([fromV1["id"]]);
  });

  it("a v1 update resets description and aliases when omitted; a v2 PATCH keeps them", async () => {
    const org = await newOrg();
    const uid = uidOf(await post(`/registry/v2beta1/repos/${org}`, { name: "app", description: "keep me", aliases: ["alias"] }));
    expect(await patch(`/registry/v2beta1/repos/${uid}`, { name: "app-2" })).toMatchObject({ description: "keep me", aliases: ["alias"] });
    const replaced = await put(`/registry/v1/repos/${uid}`, { name: "app-3" });
    expect(replaced).toMatchObject({ name: "app-3", description: "", aliases: [] });
    expect(replaced).toEqual(v1View(await get(`/registry/v2beta1/repos/${uid}`)));
  });

  it("rejects bad names, refuses deleting a repo with tags, deletes an empty one", async () => {
    const org = await newOrg();
    expectInvalid(await call("POST", `/registry/v1/repos/${org}`, { name: "Bad Name" }), "name");
    const repo = await post(`/registry/v1/repos/${org}`, { name: "holder" });
    const tag = await post(`/registry/v1/tags/${repo["id"]}`, { name: "v1", digest: DIGEST_A });
    expectPrecondition(await call("DELETE", `/registry/v1/repos/${repo["id"]}`), "RESOURCE_NOT_EMPTY");
    expect(await ok(call("DELETE", `/registry/v1/tags/${tag["id"]}`))).toEqual({});
    expect(await ok(call("DELETE", `/registry/v1/repos/${repo["id"]}`))).toEqual({});
    expect(await items(`/registry/v1/repos?id=${repo["id"]}`)).toEqual([]);
  });
});

describe("tags in v1", () => {
  it("agree with v2 both ways; a v1 update resets deprecated when omitted, a v2 PATCH keeps it", async () => {
    const org = await newOrg();
    const repo = uidOf(await post(`/registry/v2beta1/repos/${org}`, { name: "app" }));
    const fromV2 = await post(`/registry/v2beta1/tags/${repo}`, { name: "1.0", digest: DIGEST_A, deprecated: true });
    expect(await v1One("/registry/v1/tags", uidOf(fromV2))).toEqual(v1View(fromV2));
    const fromV1 = await post(`/registry/v1/tags/${repo}`, { name: "2.0", digest: DIGEST_B, deprecated: true });
    expect(fromV1["id"]).toMatch(new RegExp(`^${repo}/[0-9a-f]{16}$`));
    expect(fromV1).toEqual(v1View(await get(`/registry/v2beta1/tags/${fromV1["id"]}`)));

    expect(await patch(`/registry/v2beta1/tags/${uidOf(fromV2)}`, { digest: DIGEST_B })).toMatchObject({ deprecated: true });
    const replaced = await put(`/registry/v1/tags/${uidOf(fromV2)}`, { name: "1.0", digest: DIGEST_A });
    expect(replaced).toMatchObject({ deprecated: false, digest: DIGEST_A });
    expect(replaced).toEqual(v1View(await get(`/registry/v2beta1/tags/${uidOf(fromV2)}`)));
    expect((await items(`/registry/v1/tags?uidp.children_of=${repo}`)).map((t) => t["name"])).toEqual(
      [fromV2, fromV1].sort((a, b) => String(a["uid"] ?? a["id"]).localeCompare(String(b["uid"] ?? b["id"]))).map((t) => t["name"]),
    );
    expect((await items(`/registry/v1/tags?uidp.descendants_of=${org}&name=2.0`)).map((t) => t["id"])).toEqual([fromV1["id"]]);
  });

  it("rejects a bad digest, and an update that omits it", async () => {
    const org = await newOrg();
    const repo = uidOf(await post(`/registry/v2beta1/repos/${org}`, { name: "app" }));
    expectInvalid(await call("POST", `/registry/v1/tags/${repo}`, { name: "x", digest: "md5:abc" }), "digest");
    const tag = await post(`/registry/v1/tags/${repo}`, { name: "x", digest: DIGEST_A });
    expectInvalid(await call("PUT", `/registry/v1/tags/${tag["id"]}`, { name: "x" }), "digest");
  });
});

describe("authorization in v1 (the same declarations as v2)", () => {
  let orgA: string;
  let orgB: string;
  let viewer: RestClient;

  beforeAll(async () => {
    orgA = uidOf(await createGroup(call, "authz-a"));
    await createGroup(call, "team-a", orgA);
    orgB = await newOrg();
    await createGroup(call, "team-b", orgB);
    await post(`/registry/v2beta1/repos/${orgA}`, { name: "repo-a" });
    await post(`/registry/v2beta1/repos/${orgB}`, { name: "repo-b" });
    const identity = uidOf(await createIdentity(call, orgA, { name: "viewer-a" }));
    await ok(bind(call, orgA, identity, "viewer"));
    viewer = restClient(server.url, (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
  });

  it("a viewer lists its own organization through v1", async () => {
    const groups = await ok(viewer("GET", "/iam/v1/groups"));
    expect((groups["items"] as JsonObject[]).map((g) => g["name"]).sort()).toEqual(["authz-a", "team-a"]);
    const repos = await ok(viewer("GET", "/registry/v1/repos"));
    expect((repos["items"] as JsonObject[]).map((r) => r["name"])).toEqual(["repo-a"]);
  });

  it("a viewer is refused (403) updating, creating and deleting through v1", async () => {
    for (const [method, path, body] of [
      ["PUT", `/iam/v1/groups/${orgA}`, { name: "renamed" }],
      ["PATCH", `/iam/v1/groups/${orgA}`, { name: "renamed" }],
      ["POST", `/iam/v1/groups/${orgA}`, { name: "child" }],
      ["DELETE", `/iam/v1/groups/${orgA}`, undefined],
      ["POST", `/registry/v1/repos/${orgA}`, { name: "nope" }],
    ] as const) {
      const res = await viewer(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body["code"]).toBe(7);
    }
    expect((await v1One("/iam/v1/groups", orgA))["name"]).toBe("authz-a");
  });

  it("a viewer sees nothing of another organization through v1", async () => {
    expect((await ok(viewer("GET", `/iam/v1/groups?id=${orgB}`)))["items"]).toEqual([]);
    expect((await ok(viewer("GET", `/iam/v1/groups?uidp.descendants_of=${orgB}`)))["items"]).toEqual([]);
    expect((await ok(viewer("GET", `/registry/v1/repos?uidp.children_of=${orgB}`)))["items"]).toEqual([]);
    expect((await viewer("PUT", `/iam/v1/groups/${orgB}`, { name: "mine" })).status).toBe(403);
    expect((await viewer("DELETE", `/iam/v1/groups/${orgB}/0000000000000000`)).status).toBe(403);
  });

  it("every call needs a token", async () => {
    const res = await restClient(server.url, undefined)("GET", "/iam/v1/groups");
    expect(res.status).toBe(401);
    expect(res.body["code"]).toBe(16);
  });
});

interface V1GroupMsg {
  id: string;
  name: string;
  description: string;
  resource_limits: { clusters: number; idps: number; repositories: number } | null;
  verified: boolean;
  created_at: { seconds: string; nanos: number } | null;
  updated_at: { seconds: string; nanos: number } | null;
}

describe("groups over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(() => server, "platform.iam.v1.GroupsService", "platform/iam/v1/groups.proto");

  it("creates, lists by id, replaces and deletes, in agreement with v2", async () => {
    const root = await rpc<V1GroupMsg>("CreateGroup", { group: { name: "grpc-v1", description: "d", resource_limits: { clusters: 2 } } });
    expect(root.id).toMatch(/^[0-9a-f]{40}$/);
    expect(root.resource_limits).toEqual({ clusters: 2, idps: 0, repositories: 0 });
    expect(root.created_at?.seconds).toMatch(/^\d+$/);
    const listed = await rpc<{ items: V1GroupMsg[] }>("ListGroups", { id: root.id });
    expect(listed).toEqual({ items: [root] });

    const replaced = await rpc<V1GroupMsg>("UpdateGroup", { group: { id: root.id, name: "grpc-v1" } });
    expect(replaced).toMatchObject({ description: "", resource_limits: { clusters: 0, idps: 0, repositories: 0 } });
    expect(await get(`/iam/v2beta1/groups/${root.id}`)).toMatchObject({ description: "", resourceLimits: {} });

    expect(await rpc("DeleteGroup", { id: root.id })).toEqual({});
    expect(await rpc("ListGroups", { id: root.id })).toEqual({ items: [] });
  });

  it("sends typed errors in grpc-status-details-bin", async () => {
    const err = await failure(rpc("CreateGroup", { group: { name: "Bad!" } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = grpcStatusDetails(err);
    expect(status.message).toBe(`Invalid argument: name: ${GROUP_NAME_RULE}`);
    expect(status.details.find((d) => d.type === "google.rpc.BadRequest")?.value).toMatchObject({
      fieldViolations: [{ field: "name", description: GROUP_NAME_RULE }],
    });
    expect(status.details.find((d) => d.type === "google.rpc.ErrorInfo")?.value).toMatchObject({
      reason: "INVALID_ARGUMENT",
      domain: "iam.localhost",
    });
    const missing = await failure(rpc("UpdateGroup", { group: { id: "0".repeat(40), name: "x" } }));
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    const noId = await failure(rpc("UpdateGroup", { group: { name: "x" } }));
    expect(noId.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcStatusDetails(noId).message).toBe("Invalid argument: group.id: is required");
  });
});

interface V1RepoMsg {
  id: string;
  name: string;
  description: string;
  aliases: string[];
  active_tags: string[];
}

describe("repos over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(() => server, "platform.registry.v1.ReposService", "platform/registry/v1/repos.proto");

  it("creates, lists, replaces and deletes, in agreement with v2", async () => {
    const org = await newOrg();
    const repo = await rpc<V1RepoMsg>("CreateRepo", { parent: org, repo: { name: "grpc/app", description: "d", aliases: ["app"] } });
    expect(repo.id).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(await rpc("ListRepos", { uidp: { children_of: org } })).toEqual({ items: [repo] });
    const replaced = await rpc<V1RepoMsg>("UpdateRepo", { repo: { id: repo.id, name: "grpc/app" } });
    expect(replaced).toMatchObject({ description: "", aliases: [] });
    expect(await get(`/registry/v2beta1/repos/${repo.id}`)).toMatchObject({ name: "grpc/app", description: "", aliases: [] });
    expect(await rpc("DeleteRepo", { id: repo.id })).toEqual({});
    const gone = await failure(rpc("DeleteRepo", { id: repo.id }));
    expect(gone.code).toBe(grpc.status.NOT_FOUND);
    const bad = await failure(rpc("CreateRepo", { parent: org, repo: { name: "UPPER" } }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});
