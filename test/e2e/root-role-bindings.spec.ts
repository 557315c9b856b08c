import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { RootRoleBindingsService } from "../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { findOrCreatePersonIdentity } from "../../src/auth/login/person-identity.js";
import { newRootBindingUid, schema } from "../../src/db/index.js";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCliInProcess as runCli } from "../support/cli-in-process.js";
import { connectClient, restClient, type JsonObject, type Protocol, type RestClient } from "../support/clients.js";
import {
  TIMESTAMP,
  bind,
  bootstrapIdentityUid,
  createGroup,
  createIdentity,
  createRole,
  expectInvalid,
  ok,
  restDetail,
  uidOf,
} from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

// Role bindings at the root (docs/iam.md, "Platform administrators (root role bindings)"): the same
// hydrated RoleBinding as a group's, without a group, for root capability
// holders only, within the grant ceiling at the root, on every protocol.

const ROOT = "/iam/v2beta1/rootRoleBindings";

let server: TestServer;
let admin: RestClient;
let counter = 0;
beforeAll(async () => ({ server, call: admin } = await sharedServerAsAdmin()));

/** A person as browser sign-in makes them (a root-level identity), and a token of theirs. */
async function person(name: string): Promise<{ uid: string; call: RestClient; token: string }> {
  const who = {
    issuer: "https://people.example",
    subject: `${name}-${++counter}`,
    email: `${name}@example.com`,
    emailVerified: true,
    name: `${name}@example.com`,
  };
  const uid = await server.app.database.db.transaction((tx) => findOrCreatePersonIdentity(tx, who, server.clock.now()));
  const token = (await server.app.tokens.mint(uid, server.app.urls.baseUrl)).token;
  return { uid, call: restClient(server.url, token), token };
}

const importAdvisory = (call: RestClient) =>
  call("POST", "/vulnerabilities/v2beta1/advisories:import", {
    documents: [{ id: `CVE-2098-${String(++counter).padStart(5, "0")}`, modified: "2024-01-01T00:00:00Z", aliases: [] }],
  });

function expectDenied(res: { status: number; body: JsonObject }, reason?: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body["code"]).toBe(7);
  if (reason) expect(restDetail({ ...res, headers: new Headers() }, "ErrorInfo")?.["reason"]).toBe(reason);
}

describe("root role bindings over REST", () => {
  it("lists the bootstrap identity's owner binding, hydrated and without a group", async () => {
    const bootstrap = bootstrapIdentityUid(server.token);
    const body = await ok(admin("GET", `${ROOT}?identity=${bootstrap}`));
    expect(body["totalCount"]).toBe("1");
    const [binding] = body["rootRoleBindings"] as JsonObject[];
    expect(binding).toMatchObject({ identity: { uid: bootstrap, name: "bootstrap" }, group: null, role: { uid: "owner", name: "owner" } });
    expect(uidOf(binding!)).toMatch(/^[0-9a-f]{16}$/);
    expect(((binding!["role"] as JsonObject)["description"] as string).length).toBeGreaterThan(0);
  });

  it("creates, gets, lists, refuses a duplicate and deletes a binding; the person's grants follow on the next request", async () => {
    const ada = await person("ada");
    // No role yet: importing advisories (advisories.create at the root) is refused.
    expectDenied(await importAdvisory(ada.call));

    const created = await ok(admin("POST", ROOT, { identityUid: ada.uid, roleUid: "owner" }));
    expect(created).toEqual({
      uid: uidOf(created),
      identity: {
        uid: ada.uid,
        name: "ada@example.com",
        description: "Signed in through https://people.example",
        subject: expect.stringMatching(/^ada-/),
        issuer: "https://people.example",
      },
      group: null,
      role: { uid: "owner", name: "owner", description: expect.any(String) },
      createTime: expect.stringMatching(TIMESTAMP),
      roleUid: "owner",
      identityUid: ada.uid,
    });
    expect(created).not.toHaveProperty("updateTime");
    expect(await ok(admin("GET", `${ROOT}/${uidOf(created)}`))).toEqual(created);
    expect(await ok(admin("GET", `${ROOT}?identity=${ada.uid}`))).toEqual({
      rootRoleBindings: [created],
      nextPageToken: "",
      totalCount: "1",
      skipped: 0,
    });
    const owners = await ok(admin("GET", `${ROOT}?role=owner&order_by=create_time%20desc`));
    expect((owners["rootRoleBindings"] as JsonObject[]).map(uidOf)[0]).toBe(uidOf(created));

    // At once, without a retry: the grants cache was cleared by the change.
    expect((await importAdvisory(ada.call)).status).toBe(200);
    // The owner at the root reaches every organization.
    const org = uidOf(await createGroup(admin, `elsewhere-${++counter}`));
    expect((await ada.call("GET", `/iam/v2beta1/groups/${org}`)).status).toBe(200);

    const again = await admin("POST", ROOT, { identityUid: ada.uid, roleUid: "owner" });
    expect(again.status, JSON.stringify(again.body)).toBe(409);
    expect(again.body["code"]).toBe(6);

    expect(await ok(admin("DELETE", `${ROOT}/${uidOf(created)}`))).toEqual({});
    expect((await admin("GET", `${ROOT}/${uidOf(created)}`)).status).toBe(404);
    expect((await admin("DELETE", `${ROOT}/${uidOf(created)}`)).status).toBe(404);
    expectDenied(await importAdvisory(ada.call));
    expectDenied(await ada.call("GET", `/iam/v2beta1/groups/${org}`));
  });

  it("binds only what is visible from the root: root-level identities and built-in roles", async () => {
    const ada = await person("ada");
    const org = uidOf(await createGroup(admin, `visibility-${++counter}`));
    const robot = uidOf(await createIdentity(admin, org, { name: "robot" }));
    const custom = uidOf(await createRole(admin, org, { name: "custom", capabilities: ["repo.list"] }));
    expect(expectInvalid(await admin("POST", ROOT, { identityUid: robot, roleUid: "viewer" }), "identity_uid")).toContain(
      "not visible from the root",
    );
    expect(expectInvalid(await admin("POST", ROOT, { identityUid: ada.uid, roleUid: custom }), "role_uid")).toContain(
      "not visible from the root",
    );
    expect(expectInvalid(await admin("POST", ROOT, { identityUid: "0123456789abcdef", roleUid: "viewer" }), "identity_uid")).toContain(
      "does not exist",
    );
    expectInvalid(await admin("POST", ROOT, { identityUid: ada.uid }), "role_uid");
    expectInvalid(await admin("POST", ROOT, { roleUid: "viewer" }), "identity_uid");
    expectInvalid(await admin("POST", ROOT, { identityUid: ada.uid, roleUid: "admin" }), "role_uid");
    expect((await ok(admin("GET", `${ROOT}?identity=${ada.uid}`)))["totalCount"]).toBe("0");
  });

  it("deleting the identity deletes its root bindings", async () => {
    const org = uidOf(await createGroup(admin, `cascade-${++counter}`));
    const bob = await person("bob");
    await ok(admin("POST", ROOT, { identityUid: bob.uid, roleUid: "viewer" }));
    expect((await bob.call("GET", `/iam/v2beta1/groups/${org}`)).status).toBe(200);
    await ok(admin("DELETE", `/iam/v2beta1/identities/${bob.uid}`));
    expect((await ok(admin("GET", `${ROOT}?identity=${bob.uid}`)))["totalCount"]).toBe("0");
  });

  it("pages with the shared List engine (order_by, page_token, skip)", async () => {
    const people = [await person("p"), await person("p"), await person("p")];
    for (const p of people) await ok(admin("POST", ROOT, { identityUid: p.uid, roleUid: "viewer" }));
    const first = await ok(admin("GET", `${ROOT}?role=viewer&order_by=create_time&page_size=2`));
    expect(Number(first["totalCount"])).toBeGreaterThanOrEqual(3);
    expect(first["rootRoleBindings"]).toHaveLength(2);
    const rest = await ok(
      admin("GET", `${ROOT}?role=viewer&order_by=create_time&page_size=2&page_token=${first["nextPageToken"] as string}`),
    );
    const seen = [...(first["rootRoleBindings"] as JsonObject[]), ...(rest["rootRoleBindings"] as JsonObject[])].map(uidOf);
    expect(new Set(seen).size).toBe(Number(first["totalCount"]));
    expectInvalid(await admin("GET", `${ROOT}?order_by=name`), "order_by");
    expectInvalid(await admin("GET", `${ROOT}?role=owner&page_token=${first["nextPageToken"] as string}`), "page_token");
  });
});

describe("who may use root role bindings", () => {
  it("an organization's owner may not: every method is PERMISSION_DENIED", async () => {
    const org = uidOf(await createGroup(admin, `owned-${++counter}`));
    const carol = await person("carol");
    await ok(bind(admin, org, carol.uid, "owner"));
    const existing = uidOf(((await ok(admin("GET", `${ROOT}?role=owner`)))["rootRoleBindings"] as JsonObject[])[0]!);
    expectDenied(await carol.call("GET", ROOT));
    expectDenied(await carol.call("GET", `${ROOT}/${existing}`));
    expectDenied(await carol.call("POST", ROOT, { identityUid: carol.uid, roleUid: "owner" }));
    expectDenied(await carol.call("DELETE", `${ROOT}/${existing}`));
  });

  it("a viewer at the root may list and get, but not create or delete", async () => {
    const dan = await person("dan");
    await ok(admin("POST", ROOT, { identityUid: dan.uid, roleUid: "viewer" }));
    const listed = await ok(dan.call("GET", ROOT));
    const existing = uidOf((listed["rootRoleBindings"] as JsonObject[])[0]!);
    await ok(dan.call("GET", `${ROOT}/${existing}`));
    expectDenied(await dan.call("POST", ROOT, { identityUid: dan.uid, roleUid: "owner" }));
    expectDenied(await dan.call("DELETE", `${ROOT}/${existing}`));
  });

  it("the grant ceiling: a root binder binds only roles whose capabilities it holds at the root", async () => {
    // The built-in roles that carry role_bindings.create (owner) hold everything, so the ceiling can only
    // refuse a root binder with a narrower role: one is bound at the root here directly in the database.
    const org = uidOf(await createGroup(admin, `ceiling-${++counter}`));
    const viewerCaps = ((await ok(admin("GET", "/iam/v2beta1/roles/viewer")))["capabilities"] as string[]) ?? [];
    const binder = uidOf(
      await createRole(admin, org, { name: "root-binder", capabilities: [...new Set([...viewerCaps, "role_bindings.create"])] }),
    );
    const erin = await person("erin");
    await server.app.database.db
      .insert(schema.rootRoleBindings)
      .values({ uid: newRootBindingUid(), identityUid: erin.uid, roleUid: binder, createTime: server.clock.now() });
    const frank = await person("frank");

    const beyond = await erin.call("POST", ROOT, { identityUid: frank.uid, roleUid: "owner" });
    expectDenied(beyond, "GRANT_CEILING");
    expect(beyond.body["message"]).toContain("at the root");
    await ok(erin.call("POST", ROOT, { identityUid: frank.uid, roleUid: "viewer" }));
  });
});

describe.each<Protocol>(["grpc", "connect", "grpc-web"])("root role bindings over %s", (protocol) => {
  it("creates, gets, lists and deletes; errors are typed", async () => {
    const client = connectClient(RootRoleBindingsService, server.url, server.token, protocol);
    const gina = await person("gina");
    const created = await client.createRootRoleBinding({ identityUid: gina.uid, roleUid: "editor" });
    expect(created.uid).toMatch(/^[0-9a-f]{16}$/);
    expect(created.group).toBeUndefined();
    expect(created.identity?.uid).toBe(gina.uid);
    expect(created.role?.uid).toBe("editor");
    expect((await client.getRootRoleBinding({ uid: created.uid })).createTime).toEqual(created.createTime);
    const listed = await client.listRootRoleBindings({ identity: gina.uid });
    expect(listed.rootRoleBindings.map((b) => b.uid)).toEqual([created.uid]);
    expect(listed.totalCount).toBe(1n);

    const dup = await client
      .createRootRoleBinding({ identityUid: gina.uid, roleUid: "editor" })
      .catch((e: unknown) => ConnectError.from(e));
    expect((dup as ConnectError).code).toBe(Code.AlreadyExists);
    const bad = await client.createRootRoleBinding({ identityUid: gina.uid, roleUid: "nope" }).catch((e: unknown) => ConnectError.from(e));
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    expect((bad as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("role_uid");

    await client.deleteRootRoleBinding({ uid: created.uid });
    const gone = await client.getRootRoleBinding({ uid: created.uid }).catch((e: unknown) => ConnectError.from(e));
    expect((gone as ConnectError).code).toBe(Code.NotFound);

    const outsider = connectClient(RootRoleBindingsService, server.url, gina.token, protocol);
    const denied = await outsider.listRootRoleBindings({}).catch((e: unknown) => ConnectError.from(e));
    expect((denied as ConnectError).code).toBe(Code.PermissionDenied);
    expect((denied as ConnectError).findDetails(ErrorInfoSchema)[0]?.reason).toBeTruthy();
  });

  it("refuses NUL, odd uids and huge strings with INVALID_ARGUMENT naming the field", async () => {
    const client = connectClient(RootRoleBindingsService, server.url, server.token, protocol);
    const org = uidOf(await createGroup(admin, `odd-${protocol}-${++counter}`));
    const probes: [string, () => Promise<unknown>, string][] = [
      ["get NUL", () => client.getRootRoleBinding({ uid: "0123456789abcde\u0000" }), "uid"],
      ["get group uid", () => client.getRootRoleBinding({ uid: org }), "uid"],
      ["get child uid", () => client.getRootRoleBinding({ uid: `${org}/0123456789abcdef` }), "uid"],
      ["get upper case", () => client.getRootRoleBinding({ uid: "0123456789ABCDEF" }), "uid"],
      ["get huge", () => client.getRootRoleBinding({ uid: "a".repeat(100_000) }), "uid"],
      ["delete NUL", () => client.deleteRootRoleBinding({ uid: "\u0000" }), "uid"],
      ["delete empty", () => client.deleteRootRoleBinding({ uid: "" }), "uid"],
      ["create NUL identity", () => client.createRootRoleBinding({ identityUid: "x\u0000", roleUid: "viewer" }), "identity_uid"],
      [
        "create huge role",
        () => client.createRootRoleBinding({ identityUid: "0123456789abcdef", roleUid: "r".repeat(100_000) }),
        "role_uid",
      ],
      ["create surrogate", () => client.createRootRoleBinding({ identityUid: "0123456789abcdef", roleUid: "\ud800" }), "role_uid"],
      ["list NUL identity", () => client.listRootRoleBindings({ identity: "\u0000" }), "identity"],
      ["list huge role", () => client.listRootRoleBindings({ role: "😀".repeat(50_000) }), "role"],
      ["list negative skip", () => client.listRootRoleBindings({ skip: -1 }), "skip"],
    ];
    for (const [label, run, field] of probes) {
      const err = await run().then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, label).toBe(Code.InvalidArgument);
      expect(err?.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, label).toBe(field);
    }
  });
});

describe("bad input over REST", () => {
  it("answers each probe with 400 and a BadRequest naming the field", async () => {
    const org = uidOf(await createGroup(admin, `odd-rest-${++counter}`));
    const probes: [string, string, unknown, string][] = [
      ["GET", `${ROOT}/0123456789abcdef%00`, undefined, "uid"],
      ["GET", `${ROOT}/${org}`, undefined, "uid"],
      ["GET", `${ROOT}/${"a".repeat(5000)}`, undefined, "uid"],
      ["DELETE", `${ROOT}/0123456789abcdef.x`, undefined, "uid"],
      ["GET", `${ROOT}?identity=%00`, undefined, "identity"],
      ["GET", `${ROOT}?role=${"x".repeat(5000)}`, undefined, "role"],
      ["POST", ROOT, { identityUid: "x\u0000", roleUid: "viewer" }, "identity_uid"],
      ["POST", ROOT, { identityUid: "0123456789abcdef", roleUid: "v".repeat(200_000) }, "role_uid"],
      ["POST", ROOT, { identityUid: "0123456789abcdef", roleUid: "viewer", parent: org }, "parent"],
    ];
    for (const [method, path, body, field] of probes) {
      const res = await admin(method, path, body);
      expect(res.status, `${method} ${path.slice(0, 80)}: ${JSON.stringify(res.body).slice(0, 300)}`).toBe(400);
      expect(res.body["code"]).toBe(3);
      const violations = (restDetail(res, "BadRequest")?.["fieldViolations"] ?? []) as JsonObject[];
      expect(violations[0]?.["field"], `${method} ${path.slice(0, 80)}`).toBe(field);
    }
    // A uid never spans segments: a nested path is no route.
    expect((await admin("GET", `${ROOT}/0123456789abcdef/0123456789abcdef`)).status).toBe(404);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

describe("platformctl iam root-role-bindings", () => {
  it("creates, lists, gets and deletes root bindings; -o json is the REST JSON", async () => {
    const configDir = await mkdtemp(join(tmpdir(), "platformctl-root-"));
    try {
      const cli = (...args: string[]) =>
        runCli(["--api", server.url, "iam", "root-role-bindings", ...args], {
          PLATFORM_CONFIG_DIR: configDir,
          PLATFORM_TOKEN: server.token,
        });
      const hana = await person("hana");
      const created = await cli("create", "--identity", hana.uid, "--role", "viewer", "-o", "json");
      expect(created.code, created.stderr).toBe(0);
      const binding = JSON.parse(created.stdout) as JsonObject;
      expect(binding).toMatchObject({ identity: { uid: hana.uid }, group: null, role: { uid: "viewer" } });

      const table = await cli("list", "--identity", hana.uid);
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/^UID\s+IDENTITY\s+IDENTITY UID\s+ROLE\s+CREATED/);
      expect(table.stdout).toContain(uidOf(binding));
      expect(table.stdout).toContain("viewer");
      const got = await cli("get", uidOf(binding), "-o", "json");
      expect(JSON.parse(got.stdout)).toEqual(binding);

      const duplicate = await cli("create", "--identity", hana.uid, "--role", "viewer");
      expect(duplicate.code).toBe(5);
      expect((await cli("delete", uidOf(binding))).code).toBe(0);
      expect((await cli("get", uidOf(binding))).code).toBe(3);
      // An organization's owner is refused (exit 4).
      const org = uidOf(await createGroup(admin, `cli-${++counter}`));
      await ok(bind(admin, org, hana.uid, "owner"));
      const refused = await runCli(["--api", server.url, "iam", "root-role-bindings", "list"], {
        PLATFORM_CONFIG_DIR: configDir,
        PLATFORM_TOKEN: hana.token,
      });
      expect(refused.code).toBe(4);
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  }, 60_000);
});
