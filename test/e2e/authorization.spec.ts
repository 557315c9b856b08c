import type { DescMethod } from "@bufbuild/protobuf";
import grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { BUILT_IN_ROLES } from "../../src/capabilities/index.js";
import { declaredAuthorization } from "../../src/descriptors/index.js";
import { schema } from "../../src/db/index.js";
import { API_SERVICES } from "../../src/services/index.js";
import { grpcJsClient, grpcUnary, restClient, type JsonObject, type RestResponse, type RestClient } from "../support/clients.js";
import { startOidcProvider, type TestOidcProvider } from "../support/oidc-provider.js";
import { bind, createGroup, createIdentity, createRole, ok, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

const OSV_DOCUMENT = { id: "CVE-2099-0001", modified: "2024-01-01T00:00:00Z", aliases: [] };

let server: TestServer;
let admin: RestClient;

beforeAll(async () => {
  server = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true" });
  admin = restClient(server.url, server.token);
});
afterAll(async () => {
  await server?.stop();
});

/** An identity in `group` bound to `role` there, and a REST client calling as it. */
async function member(group: string, role: string, name: string) {
  const identity = await createIdentity(admin, group, { name });
  await ok(bind(admin, group, uidOf(identity), role));
  const token = (await server.app.tokens.mint(uidOf(identity), server.app.urls.baseUrl)).token;
  return { identity: uidOf(identity), token, call: restClient(server.url, token) };
}

function expectDenied(res: RestResponse, label: string): void {
  expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(403);
  expect(res.body["code"]).toBe(7);
  const info = (res.body["details"] as JsonObject[]).find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
  expect(info).toMatchObject({ reason: "PERMISSION_DENIED" });
}

describe("declarations", () => {
  it("every API method declares the capability it needs", () => {
    const methods: DescMethod[] = API_SERVICES.flatMap((s) => s.service.methods);
    expect(methods.length).toBeGreaterThan(40);
    const undeclared = methods.filter((m) => declaredAuthorization(m) === undefined).map((m) => `${m.parent.typeName}/${m.name}`);
    expect(undeclared).toEqual([]);
    for (const m of methods) expect(declaredAuthorization(m)!.capability, m.name).toMatch(/^[a-z_]+(\.[a-z_]+)+$/);
  });
});

describe("an identity bound as viewer in org A (token from the exchange)", () => {
  let provider: TestOidcProvider;
  let orgA: string;
  let orgB: string;
  let teamB: string;
  let viewer: RestClient;

  beforeAll(async () => {
    provider = await startOidcProvider(["ci-robot"]);
    orgA = uidOf(await createGroup(admin, "org-a"));
    await createGroup(admin, "team-a", orgA);
    orgB = uidOf(await createGroup(admin, "org-b"));
    teamB = uidOf(await createGroup(admin, "team-b", orgB));
    const identity = await createIdentity(admin, orgA, { name: "robot", claimMatch: { issuer: provider.issuer, subject: "ci-robot" } });
    await ok(bind(admin, orgA, uidOf(identity), "viewer"));
    const exchanged = await fetch(
      `${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=${uidOf(identity)}`,
      { headers: { authorization: `Bearer ${await provider.workloadToken("ci-robot", server.app.urls.authUrl)}` } },
    );
    expect(exchanged.status).toBe(200);
    viewer = restClient(server.url, ((await exchanged.json()) as { token: string }).token);
  });
  afterAll(async () => {
    await provider?.stop();
  });

  it("lets an identity without any role read itself, and nothing else", async () => {
    const org = await createGroup(admin, "self-read");
    const loner = await createIdentity(admin, uidOf(org), { name: "loner" });
    const other = await createIdentity(admin, uidOf(org), { name: "other" });
    const token = (await server.app.tokens.mint(uidOf(loner), server.app.urls.baseUrl)).token;
    const call = restClient(server.url, token);
    const self = await call("GET", `/iam/v2beta1/identities/${uidOf(loner)}`);
    expect(self.status).toBe(200);
    expect(self.body["name"]).toBe("loner");
    expectDenied(await call("GET", `/iam/v2beta1/identities/${uidOf(other)}`), "another identity");
    // A list shows only what the caller may list: not even itself.
    const listed = await call("GET", `/iam/v2beta1/identities?uidp.in_root=${uidOf(org)}`);
    expect(listed.status).toBe(200);
    expect(listed.body["identities"]).toEqual([]);
  });

  it("lists org A, and only org A", async () => {
    const list = await ok(viewer("GET", "/iam/v2beta1/groups?order_by=name"));
    expect((list["groups"] as JsonObject[]).map((g) => g["name"])).toEqual(["org-a", "team-a"]);
    expect(list["totalCount"]).toBe("2");
    expect((await viewer("GET", `/iam/v2beta1/groups/${orgA}`)).status).toBe(200);
  });

  it("is refused creating in A with 403 / code 7", async () => {
    expectDenied(await viewer("POST", `/iam/v2beta1/groups/${orgA}`, { name: "nope" }), "create group");
    expectDenied(await viewer("POST", `/registry/v2beta1/repos/${orgA}`, { name: "nope" }), "create repo");
    expectDenied(await viewer("PATCH", `/iam/v2beta1/groups/${orgA}`, { description: "x" }), "update group");
  });

  it("sees nothing of org B, whether or not the thing exists", async () => {
    expect((await ok(viewer("GET", `/iam/v2beta1/groups?uidp.descendants_of=${orgB}`)))["groups"]).toEqual([]);
    expect((await ok(viewer("GET", `/iam/v2beta1/groups?uidp.in_root=${orgB}`)))["totalCount"]).toBe("0");
    expectDenied(await viewer("GET", `/iam/v2beta1/groups/${orgB}`), "get B");
    expectDenied(await viewer("GET", `/iam/v2beta1/groups/${teamB}`), "get B's team");
    expectDenied(await viewer("GET", `/iam/v2beta1/groups/${orgB}/0123456789abcdef`), "get a missing group in B");
    expectDenied(await viewer("DELETE", `/iam/v2beta1/groups/${orgB}`), "delete B");
  });
});

describe("built-in roles × operations", () => {
  let org: string;
  let fixtures: Record<string, string>;
  // Names of created things differ across roles and operations.
  let unique = 0;

  beforeAll(async () => {
    org = uidOf(await createGroup(admin, "matrix"));
    const repo = uidOf(await ok(admin("POST", `/registry/v2beta1/repos/${org}`, { name: "app" })));
    const tag = uidOf(await ok(admin("POST", `/registry/v2beta1/tags/${repo}`, { name: "v1", digest: `sha256:${"a".repeat(64)}` })));
    const role = uidOf(await createRole(admin, org, { name: "custom", capabilities: ["repo.list"] }));
    const someone = uidOf(await createIdentity(admin, org, { name: "someone" }));
    const binding = uidOf(await ok(bind(admin, org, someone, "viewer")));
    fixtures = { repo, tag, role, someone, binding };
  });

  // Each operation: the capability it needs and a request against org resources.
  const operations: [string, (f: Record<string, string>, org: string, n: number) => [string, string, unknown?]][] = [
    ["groups.list", (_f, o) => ["GET", `/iam/v2beta1/groups/${o}`]],
    ["groups.create", (_f, o, n) => ["POST", `/iam/v2beta1/groups/${o}`, { name: `child-${n}` }]],
    ["groups.update", (_f, o) => ["PATCH", `/iam/v2beta1/groups/${o}`, { description: "changed" }]],
    ["identity.list", (f) => ["GET", `/iam/v2beta1/identities/${f["someone"]}`]],
    ["identity.create", (_f, o, n) => ["POST", `/iam/v2beta1/identities/${o}`, { name: `id-${n}` }]],
    ["identity.update", (f) => ["PATCH", `/iam/v2beta1/identities/${f["someone"]}`, { description: "changed" }]],
    ["roles.list", (f) => ["GET", `/iam/v2beta1/roles/${f["role"]}`]],
    ["roles.create", (_f, o, n) => ["POST", `/iam/v2beta1/roles/${o}`, { name: `role-${n}`, capabilities: [] }]],
    ["roles.update", (f) => ["PATCH", `/iam/v2beta1/roles/${f["role"]}`, { description: "changed" }]],
    ["role_bindings.list", (f) => ["GET", `/iam/v2beta1/roleBindings/${f["binding"]}`]],
    ["role_bindings.create", (f, o) => ["POST", `/iam/v2beta1/roleBindings/${o}`, { identityUid: f["someone"], roleUid: "editor" }]],
    ["repo.list", (f) => ["GET", `/registry/v2beta1/repos/${f["repo"]}`]],
    ["repo.create", (_f, o, n) => ["POST", `/registry/v2beta1/repos/${o}`, { name: `repo-${n}` }]],
    ["repo.update", (f) => ["PATCH", `/registry/v2beta1/repos/${f["repo"]}`, { description: "changed" }]],
    ["tag.list", (f) => ["GET", `/registry/v2beta1/tags/${f["tag"]}`]],
    ["tag.create", (f, _o, n) => ["POST", `/registry/v2beta1/tags/${f["repo"]}`, { name: `t${n}`, digest: `sha256:${"b".repeat(64)}` }]],
    ["tag.update", (f) => ["PATCH", `/registry/v2beta1/tags/${f["tag"]}`, { deprecated: false }]],
    ["group_invites.create", (_f, o) => ["POST", `/iam/v2beta1/groupInvites/${o}`, { roleUid: "viewer", ttl: "3600s" }]],
    ["identity_providers.list", (_f, o) => ["GET", `/iam/v2beta1/identityProviders?uidp.children_of=${o}`]],
    ["advisories.list", () => ["GET", "/vulnerabilities/v2beta1/advisories"]],
    ["advisories.create", () => ["POST", "/vulnerabilities/v2beta1/advisories:import", { documents: [OSV_DOCUMENT] }]],
  ];

  it.each(BUILT_IN_ROLES.map((r) => [r.name, r.capabilities] as const))(
    "%s may do exactly what its capabilities say",
    async (role, capabilities) => {
      const who = await member(org, role, `as-${role}`);
      for (const [capability, request] of operations) {
        const [method, path, body] = request(fixtures, org, unique++);
        const res = await who.call(method, path, body);
        const label = `${role} ${capability}: ${method} ${path}`;
        // Lists are always allowed and filtered; advisories are written only from the root.
        const allowed = capabilities.includes(capability) && capability !== "advisories.create";
        if (capability.endsWith(".list") && path.includes("?")) {
          expect(res.status, label).toBe(200);
        } else if (allowed) {
          expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(200);
        } else {
          expectDenied(res, label);
        }
      }
    },
  );

  it("an organization's owner cannot write global advisories; the root owner can", async () => {
    const owner = await member(org, "owner", "org-owner");
    expectDenied(await owner.call("POST", "/vulnerabilities/v2beta1/advisories:import", { documents: [OSV_DOCUMENT] }), "org owner import");
    expect((await admin("POST", "/vulnerabilities/v2beta1/advisories:import", { documents: [OSV_DOCUMENT] })).status).toBe(200);
  });
});

describe("organizations", () => {
  it("a person (a root-level identity, as browser sign-in makes) may found an organization and becomes its owner", async () => {
    const home = uidOf(await createGroup(admin, "home-of-founder"));
    const now = server.clock.now();
    const person = "f0f0f0f0f0f0f0f0";
    await server.app.database.db.insert(schema.identities).values({
      uid: person,
      parentUid: null,
      name: "founder",
      claimIssuer: `${server.app.urls.authUrl}/dev`,
      claimSubject: "founder",
      createTime: now,
      updateTime: now,
    });
    await ok(bind(admin, home, person, "viewer"));
    const founder = {
      identity: person,
      call: restClient(server.url, (await server.app.tokens.mint(person, server.app.urls.baseUrl)).token),
    };
    const org = await ok(founder.call("POST", "/iam/v2beta1/groups", { name: "founded" }));
    expect((await founder.call("POST", `/iam/v2beta1/groups/${uidOf(org)}`, { name: "team" })).status).toBe(200);
    const bindings = await ok(admin("GET", `/iam/v2beta1/roleBindings?group=${uidOf(org)}`));
    expect(
      (bindings["roleBindings"] as JsonObject[]).map((b) => [(b["identity"] as JsonObject)["uid"], (b["role"] as JsonObject)["uid"]]),
    ).toEqual([[founder.identity, "owner"]]);
    // The founder lists what it may: its new organization and the group it is a viewer of.
    const names = ((await ok(founder.call("GET", "/iam/v2beta1/groups?order_by=name")))["groups"] as JsonObject[]).map((g) => g["name"]);
    expect(names).toEqual(["founded", "home-of-founder", "team"]);
  });
});

describe("bindings take effect on the next request", () => {
  it("grants and revokes immediately", async () => {
    const org = uidOf(await createGroup(admin, "immediate"));
    const identity = uidOf(await createIdentity(admin, org, { name: "late-joiner" }));
    const call = restClient(server.url, (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    expectDenied(await call("GET", `/iam/v2beta1/groups/${org}`), "before binding");
    const binding = await ok(bind(admin, org, identity, "viewer"));
    expect((await call("GET", `/iam/v2beta1/groups/${org}`)).status).toBe(200);
    await ok(admin("DELETE", `/iam/v2beta1/roleBindings/${uidOf(binding)}`));
    expectDenied(await call("GET", `/iam/v2beta1/groups/${org}`), "after unbinding");
  });

  it("a binding at a group reaches everything below it, not above or beside it", async () => {
    const org = uidOf(await createGroup(admin, "reach"));
    const team = uidOf(await createGroup(admin, "team", org));
    const sub = uidOf(await createGroup(admin, "sub", team));
    const sibling = uidOf(await createGroup(admin, "sibling", org));
    const who = await member(team, "viewer", "team-viewer");
    expect((await who.call("GET", `/iam/v2beta1/groups/${team}`)).status).toBe(200);
    expect((await who.call("GET", `/iam/v2beta1/groups/${sub}`)).status).toBe(200);
    expectDenied(await who.call("GET", `/iam/v2beta1/groups/${org}`), "above");
    expectDenied(await who.call("GET", `/iam/v2beta1/groups/${sibling}`), "beside");
  });
});

describe("audiences", () => {
  it("a registry token works on the registry only", async () => {
    const org = uidOf(await createGroup(admin, "registry-audience"));
    const who = await member(org, "registry.pull", "puller");
    const registryToken = (await server.app.tokens.mint(who.identity, server.app.urls.registryAudience)).token;
    const call = restClient(server.url, registryToken);
    expect((await call("GET", `/registry/v2beta1/repos?uidp.descendants_of=${org}`)).status).toBe(200);
    const iam = await call("GET", `/iam/v2beta1/groups/${org}`);
    expect(iam.status).toBe(401);
    expect(iam.body["code"]).toBe(16);
  });
});

describe("isolation over gRPC", () => {
  it("an owner of A can neither see nor touch B", async () => {
    const a = uidOf(await createGroup(admin, "grpc-a"));
    const b = uidOf(await createGroup(admin, "grpc-b"));
    const owner = await member(a, "owner", "owner-a");
    const client = grpcJsClient(`127.0.0.1:${server.app.port}`, "platform.iam.v2beta1.GroupsService", "platform/iam/v2beta1/groups.proto");
    try {
      const call = (method: string, req: unknown) => grpcUnary<{ groups?: { name: string }[] }>(client, method, req, owner.token);
      const denied = async (method: string, req: unknown) => {
        const err = await call(method, req).then(
          () => undefined,
          (e: grpc.ServiceError) => e,
        );
        expect(err?.code, method).toBe(grpc.status.PERMISSION_DENIED);
      };
      const mine = await call("ListGroups", {});
      expect(mine.groups?.map((g) => g.name)).toEqual(["grpc-a"]);
      await denied("GetGroup", { uid: b });
      await denied("GetGroup", { uid: `${b}/0000000000000000` });
      await denied("CreateGroup", { parent: b, group: { name: "intruder" } });
      await denied("UpdateGroup", { group: { uid: b, description: "x" } });
      await denied("DeleteGroup", { uid: b });
      expect((await call("CreateGroup", { parent: a, group: { name: "mine" } })).groups).toBeUndefined();
    } finally {
      client.close();
    }
  });
});

describe("grants changed outside this replica's RPCs", () => {
  it("a binding written straight to the database counts on the next request", async () => {
    const org = uidOf(await createGroup(admin, "outside-write"));
    const identity = uidOf(await createIdentity(admin, org, { name: "elsewhere" }));
    const call = restClient(server.url, (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    expectDenied(await call("GET", `/iam/v2beta1/groups/${org}`), "before");
    // As another replica or the login flow would: no RPC of this server is involved.
    const db = server.app.database.db;
    await db
      .insert(schema.roleBindings)
      .values({ uid: `${org}/00000000000000aa`, parentUid: org, identityUid: identity, roleUid: "viewer", createTime: new Date() });
    await eventually(async () => (await call("GET", `/iam/v2beta1/groups/${org}`)).status === 200);
    await db.delete(schema.roleBindings).where(eq(schema.roleBindings.uid, `${org}/00000000000000aa`));
    await eventually(async () => (await call("GET", `/iam/v2beta1/groups/${org}`)).status === 403);
  });
});

/**
 * PGlite delivers the notification before the write resolves; PostgreSQL
 * sends it to the listening connection at commit, a moment later.
 */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  const limit = server.backend === "pglite" ? 1 : 50;
  for (let i = 0; i < limit; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`not true after ${limit} tries`);
}
