import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { RoleBindingsService } from "../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { schema } from "../../src/db/index.js";
import { connectClient, restClient, type JsonObject, type RestResponse, type RestClient } from "../support/clients.js";
import { bind, createGroup, createIdentity, createRole, ok, restDetail, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// The attacks of "escalation to owner" and "anyone can found an
// organization": each must be refused, on REST and gRPC alike.

let server: TestServer;
let admin: RestClient;
let org: string;
let team: string;

beforeAll(async () => {
  server = await sharedServer();
  admin = restClient(server.url, server.token);
  org = uidOf(await createGroup(admin, "escalation-org"));
  team = uidOf(await createGroup(admin, "team", org));
});

const tokenFor = async (identityUid: string) => (await server.app.tokens.mint(identityUid, server.app.urls.baseUrl)).token;

/** An identity of `group` holding a custom role of `capabilities` there. */
async function holderOf(capabilities: string[], name: string) {
  const role = await createRole(admin, org, { name: `${name}-role`, capabilities });
  const identity = await createIdentity(admin, org, { name, claimMatch: { issuer: `https://${name}.example`, subject: name } });
  await ok(bind(admin, org, uidOf(identity), uidOf(role)));
  const token = await tokenFor(uidOf(identity));
  return { identity: uidOf(identity), role: uidOf(role), token, call: restClient(server.url, token) };
}

function expectCeiling(res: RestResponse, label: string): void {
  expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(403);
  expect(res.body["code"], label).toBe(7);
  expect(restDetail(res, "ErrorInfo"), label).toMatchObject({ reason: "GRANT_CEILING", domain: "iam.localhost" });
}

describe("grant ceiling: nobody hands out what they do not hold", () => {
  let attacker: Awaited<ReturnType<typeof holderOf>>;
  let ownerIdentity: string;

  beforeAll(async () => {
    attacker = await holderOf(
      [
        "groups.list",
        "identity.list",
        "identity.update",
        "roles.list",
        "roles.create",
        "roles.update",
        "role_bindings.list",
        "role_bindings.create",
        "role_bindings.update",
        "group_invites.create",
        "identity_providers.create",
        "identity_providers.update",
      ],
      "attacker",
    );
    ownerIdentity = uidOf(
      await createIdentity(admin, org, { name: "real-owner", claimMatch: { issuer: "https://idp.example", subject: "owner" } }),
    );
    await ok(bind(admin, org, ownerIdentity, "owner"));
  });

  it("refuses binding oneself as owner (create, batchCreate, and updating one's own binding)", async () => {
    expectCeiling(
      await attacker.call("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: attacker.identity, roleUid: "owner" }),
      "create",
    );
    expectCeiling(
      await attacker.call("POST", `/iam/v2beta1/roleBindings/${team}`, { identityUid: attacker.identity, roleUid: "owner" }),
      "create below",
    );
    expectCeiling(
      await attacker.call("POST", `/iam/v2beta1/roleBindings/${team}:batchCreate`, {
        requests: [
          { identityUid: attacker.identity, roleUid: attacker.role },
          { identityUid: attacker.identity, roleUid: "owner" },
        ],
      }),
      "batchCreate",
    );
    const own = await ok(admin("GET", `/iam/v2beta1/roleBindings?identity=${attacker.identity}`));
    const binding = uidOf((own["roleBindings"] as JsonObject[])[0]!);
    expectCeiling(await attacker.call("PATCH", `/iam/v2beta1/roleBindings/${binding}`, { roleUid: "owner" }), "update");
    // Nothing was granted on the way.
    const after = await ok(admin("GET", `/iam/v2beta1/roleBindings?identity=${attacker.identity}`));
    expect((after["roleBindings"] as JsonObject[]).map((b) => (b["role"] as JsonObject)["uid"])).toEqual([attacker.role]);
  });

  it("refuses the same over gRPC", async () => {
    const client = connectClient(RoleBindingsService, server.url, attacker.token, "grpc");
    const err = await client.createRoleBinding({ parent: org, identityUid: attacker.identity, roleUid: "owner" }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.PermissionDenied);
    expect(err?.findDetails(ErrorInfoSchema)[0]?.reason).toBe("GRANT_CEILING");
  });

  it("refuses an invite with the owner role", async () => {
    expectCeiling(await attacker.call("POST", `/iam/v2beta1/groupInvites/${org}`, { roleUid: "owner", ttl: "3600s" }), "invite");
  });

  it("refuses an identity provider whose default role is owner (create and update)", async () => {
    const oidc = { issuer: "https://idp.example", clientId: "c" };
    expectCeiling(
      await attacker.call("POST", `/iam/v2beta1/identityProviders/${org}`, { name: "idp", defaultRole: "owner", oidc }),
      "create",
    );
    const idp = await ok(admin("POST", `/iam/v2beta1/identityProviders/${org}`, { name: "idp", oidc }));
    expectCeiling(await attacker.call("PATCH", `/iam/v2beta1/identityProviders/${uidOf(idp)}`, { defaultRole: "owner" }), "update");
    // Within the ceiling it works: the attacker's own role.
    await ok(attacker.call("PATCH", `/iam/v2beta1/identityProviders/${uidOf(idp)}`, { defaultRole: attacker.role }));
  });

  it("refuses adding capabilities to one's own custom role, and creating a role above one's own", async () => {
    expectCeiling(
      await attacker.call("PATCH", `/iam/v2beta1/roles/${attacker.role}?updateMask=capabilities`, {
        capabilities: ["groups.delete", "groups.list"],
      }),
      "update",
    );
    expectCeiling(await attacker.call("POST", `/iam/v2beta1/roles/${org}`, { name: "bigger", capabilities: ["groups.delete"] }), "create");
    const smaller = await ok(attacker.call("POST", `/iam/v2beta1/roles/${org}`, { name: "smaller", capabilities: ["groups.list"] }));
    await ok(attacker.call("POST", `/iam/v2beta1/roleBindings/${team}`, { identityUid: attacker.identity, roleUid: uidOf(smaller) }));
  });

  it("refuses pointing an owner identity's claimMatch at oneself", async () => {
    expectCeiling(
      await attacker.call("PATCH", `/iam/v2beta1/identities/${ownerIdentity}`, {
        claimMatch: { issuer: "https://attacker.example", subject: "attacker" },
      }),
      "claimMatch",
    );
    // A change that leaves claimMatch alone is an ordinary update.
    await ok(attacker.call("PATCH", `/iam/v2beta1/identities/${ownerIdentity}`, { description: "still the owner" }));
    const unchanged = await ok(admin("GET", `/iam/v2beta1/identities/${ownerIdentity}`));
    expect(unchanged["claimMatch"]).toMatchObject({ issuer: "https://idp.example", subject: "owner" });
  });

  it("lets an owner do all of it", async () => {
    const owner = restClient(server.url, await tokenFor(ownerIdentity));
    await ok(owner("POST", `/iam/v2beta1/roleBindings/${team}`, { identityUid: attacker.identity, roleUid: "viewer" }));
    await ok(
      owner("PATCH", `/iam/v2beta1/identities/${attacker.identity}`, {
        claimMatch: { issuer: "https://attacker.example", subject: "other" },
      }),
    );
  });
});

describe("founding organizations (PLATFORM_ORG_CREATION)", () => {
  it("refuses a workload identity by default, allows a person and the platform administrator", async () => {
    // A CI workload holding only registry.pull somewhere.
    const ci = uidOf(
      await createIdentity(admin, team, { name: "ci-workload", claimMatch: { issuer: "https://ci.example", subject: "ci" } }),
    );
    await ok(bind(admin, team, ci, "registry.pull"));
    const workload = { token: await tokenFor(ci), call: restClient(server.url, await tokenFor(ci)) };
    const refused = await workload.call("POST", "/iam/v2beta1/groups", { name: "rogue-org" });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(restDetail(refused, "ErrorInfo")).toMatchObject({ reason: "ORG_CREATION" });
    const grpc = await connectClient(GroupsService, server.url, workload.token, "grpc")
      .createGroup({ group: { name: "rogue-org" } })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(grpc?.code).toBe(Code.PermissionDenied);

    const person = await personIdentity(server, "alice");
    await ok(restClient(server.url, await tokenFor(person))("POST", "/iam/v2beta1/groups", { name: "alice-org" }));
    await ok(admin("POST", "/iam/v2beta1/groups", { name: "admin-org" }));
  });

  it("refuses a person an organization's identity provider signed in: its owners can make up any number of people", async () => {
    // Root-level, as every browser sign-in makes it, but vouched for by a provider an organization runs.
    const minted = await personIdentity(server, "sock-1", "https://sso.attacker.example");
    const call = restClient(server.url, await tokenFor(minted));
    const refused = await call("POST", "/iam/v2beta1/groups", { name: "sybil-org" });
    expect(refused.status, JSON.stringify(refused.body)).toBe(403);
    expect(restDetail(refused, "ErrorInfo")).toMatchObject({ reason: "ORG_CREATION" });
    expect(refused.body["message"]).toContain("not an organization's identity provider");
    // It may still do what its organization lets it: founding is all it lacks.
    expect((await call("GET", `/iam/v2beta1/identities/${minted}`)).status).toBe(200);
  });

  it("people: the deployment's upstream's people, and development sign-in's only where it is on", async () => {
    const upstreamServer = await startTestServer({
      PLATFORM_OIDC_ISSUER: "https://login.example.com/",
      PLATFORM_OIDC_CLIENT_ID: "platform",
      PLATFORM_OIDC_CLIENT_SECRET: "secret",
    });
    try {
      const found = async (person: string) =>
        restClient(upstreamServer.url, (await upstreamServer.app.tokens.mint(person, upstreamServer.app.urls.baseUrl)).token)(
          "POST",
          "/iam/v2beta1/groups",
          { name: "an-org" },
        );
      // The issuer as the ID token names it (without the operator's trailing slash).
      await ok(found(await personIdentity(upstreamServer, "carol", "https://login.example.com")));
      // Development sign-in is off here: a person it once signed in is no longer the deployment's.
      expect((await found(await personIdentity(upstreamServer, "dave", `${upstreamServer.app.urls.authUrl}/dev`))).status).toBe(403);
    } finally {
      await upstreamServer.stop();
    }
  });

  it("admins: only root capability holders; anyone: workloads too", async () => {
    const admins = await startTestServer({ PLATFORM_ORG_CREATION: "admins" });
    const anyone = await startTestServer({ PLATFORM_ORG_CREATION: "anyone" });
    try {
      const person = await personIdentity(admins, "bob");
      const token = (await admins.app.tokens.mint(person, admins.app.urls.baseUrl)).token;
      const res = await restClient(admins.url, token)("POST", "/iam/v2beta1/groups", { name: "bob-org" });
      expect(res.status).toBe(403);
      await ok(restClient(admins.url, admins.token)("POST", "/iam/v2beta1/groups", { name: "root-org" }));

      const anyoneAdmin = restClient(anyone.url, anyone.token);
      const o = uidOf(await createGroup(anyoneAdmin, "o"));
      const w = uidOf(await createIdentity(anyoneAdmin, o, { name: "w" }));
      const wToken = (await anyone.app.tokens.mint(w, anyone.app.urls.baseUrl)).token;
      await ok(restClient(anyone.url, wToken)("POST", "/iam/v2beta1/groups", { name: "w-org" }));
    } finally {
      await admins.stop();
      await anyone.stop();
    }
  });
});

describe("revocation", () => {
  it("refuses a deleted identity's token on the next request", async () => {
    const member = await holderOf(["groups.list"], "short-lived");
    await ok(member.call("GET", `/iam/v2beta1/groups/${org}`));
    await ok(admin("DELETE", `/iam/v2beta1/identities/${member.identity}`));
    const res = await member.call("GET", `/iam/v2beta1/groups/${org}`);
    expect(res.status, JSON.stringify(res.body)).toBe(401);
    expect(res.body["code"]).toBe(16);
    const grpc = await connectClient(GroupsService, server.url, member.token, "grpc")
      .getGroup({ uid: org })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(grpc?.code).toBe(Code.Unauthenticated);
  });
});

/**
 * A root-level identity as a browser sign-in makes it (no group, one 16-hex segment), signed in by
 * `issuer` (default: the development provider, on by default on a test server).
 */
async function personIdentity(target: TestServer, name: string, issuer = `${target.app.urls.authUrl}/dev`): Promise<string> {
  const uid = Buffer.from(name.padEnd(8, "-")).subarray(0, 8).toString("hex");
  const now = target.clock.now();
  await target.app.database.db.insert(schema.identities).values({
    uid,
    parentUid: null,
    name,
    claimIssuer: issuer,
    claimSubject: name,
    createTime: now,
    updateTime: now,
  });
  return uid;
}
