import { createHash } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupInvitesService } from "../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { schema } from "../../src/db/index.js";
import { connectClient, grpcStatusDetails, restClient, type JsonObject, type RestClient } from "../support/clients.js";
import { connectFailure } from "../support/connect-failure.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { createGroup, createRole, expectInvalid, expectPrecondition, ok, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

const BASE = "/iam/v2beta1/groupInvites";
const CODE = /^[A-Za-z0-9_-]{43}$/;
const DAY_MS = 24 * 60 * 60 * 1000;
const VIEWER = { uid: "viewer", name: "viewer", description: "Read access to everything: every list and get." };

let server: TestServer;
// The token is read at each call: a test moves the clock past its expiry and renews it.
const call: RestClient = (...args) => restClient(server.url, server.token)(...args);

beforeAll(async () => {
  server = await sharedServer();
});

const group = async (name: string, parent?: string) => uidOf(await createGroup(call, name, parent));
const customRole = async (groupUid: string, name: string) =>
  uidOf(await createRole(call, groupUid, { name, description: `${name} role`, capabilities: ["repo.list"] }));
const invite = (groupUid: string, body: JsonObject) => ok(call("POST", `${BASE}/${groupUid}`, body));

const ms = (timestamp: unknown) => Date.parse(timestamp as string);

describe("group invites over REST", () => {
  it("creates an invite: a one-time code, a hydrated role, expiration = create time + ttl", async () => {
    const g = await group("inv-org");
    const before = server.clock.now().getTime();
    const created = await invite(g, { roleUid: "viewer", email: "ada@example.com", ttl: "3600s", singleUse: true });
    expect(created["uid"]).toMatch(new RegExp(`^${g}/[0-9a-f]{16}$`));
    expect(created["code"]).toMatch(CODE);
    expect(created).toMatchObject({ roleUid: "viewer", role: VIEWER, email: "ada@example.com", singleUse: true, redeemTime: null });
    expect(created).not.toHaveProperty("ttl");
    expect(ms(created["createTime"])).toBeGreaterThanOrEqual(before);
    expect(ms(created["expirationTime"]) - ms(created["createTime"])).toBe(3600_000);
    expect(created["updateTime"]).toBe(created["createTime"]);
  });

  it("computes the expiration from the server's clock", async () => {
    const g = await group("inv-clock");
    server.clock.advance(10 * DAY_MS);
    await server.renewToken();
    const created = await invite(g, { roleUid: "viewer", ttl: "1.5s" });
    const now = server.clock.now().getTime();
    expect(Math.abs(ms(created["createTime"]) - now)).toBeLessThan(5_000);
    expect(ms(created["expirationTime"]) - ms(created["createTime"])).toBe(1500);
  });

  it("returns the code only from the create, and stores only its SHA-256", async () => {
    const g = await group("inv-code");
    const created = await invite(g, { roleUid: "viewer", ttl: "60s" });
    const code = created["code"] as string;
    const { code: _omitted, ...withoutCode } = created;

    const got = await call("GET", `${BASE}/${created["uid"]}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(withoutCode);
    expect(got.body).not.toHaveProperty("code");
    const list = await call("GET", `${BASE}?uidp.children_of=${g}`);
    expect(list.body["groupInvites"]).toEqual([withoutCode]);
    expect(JSON.stringify(list.body)).not.toContain(code);

    const [row] = await server.app.database.db
      .select()
      .from(schema.groupInvites)
      .where(eq(schema.groupInvites.uid, created["uid"] as string));
    expect(row).toBeDefined();
    for (const value of Object.values(row!)) expect(String(value)).not.toContain(code);
    expect(row!.codeHash).toBe(createHash("sha256").update(code).digest("hex"));
  });

  it("ignores a code in the create body and makes a fresh one each time", async () => {
    const g = await group("inv-fresh");
    const a = await invite(g, { roleUid: "viewer", ttl: "60s", code: "chosen-by-the-caller" });
    const b = await invite(g, { roleUid: "viewer", ttl: "60s" });
    expect(a["code"]).toMatch(CODE);
    expect(a["code"]).not.toBe(b["code"]);
  });

  it.each<[string, JsonObject, string]>([
    ["a missing ttl", { roleUid: "viewer" }, "ttl"],
    ["a zero ttl", { roleUid: "viewer", ttl: "0s" }, "ttl"],
    ["a negative ttl", { roleUid: "viewer", ttl: "-5s" }, "ttl"],
    ["a ttl over 30 days", { roleUid: "viewer", ttl: "2592001s" }, "ttl"],
    ["a missing role", { ttl: "60s" }, "role_uid"],
    ["an unknown role", { roleUid: "no-such-role", ttl: "60s" }, "role_uid"],
    ["an email without a domain", { roleUid: "viewer", ttl: "60s", email: "ada" }, "email"],
    ["an email with a space", { roleUid: "viewer", ttl: "60s", email: "ada lovelace@example.com" }, "email"],
    ["an email with a bare host", { roleUid: "viewer", ttl: "60s", email: "ada@localhost" }, "email"],
  ])("rejects %s with INVALID_ARGUMENT naming the field", async (_label, body, field) => {
    const g = await group("inv-invalid");
    expectInvalid(await call("POST", `${BASE}/${g}`, body), field);
    expect((await call("GET", `${BASE}?uidp.children_of=${g}`)).body["totalCount"]).toBe("0");
  });

  it("accepts a ttl of exactly 30 days", async () => {
    const g = await group("inv-max");
    const created = await invite(g, { roleUid: "viewer", ttl: "2592000s" });
    expect(ms(created["expirationTime"]) - ms(created["createTime"])).toBe(30 * DAY_MS);
  });

  it("takes a role visible from the group, and hydrates it in every response", async () => {
    const root = await group("inv-roles");
    const team = await group("team", root);
    const sibling = await group("sibling", root);
    const orgRole = await customRole(root, "org-reader");
    const siblingRole = await customRole(sibling, "sibling-reader");

    expectInvalid(await call("POST", `${BASE}/${team}`, { roleUid: siblingRole, ttl: "60s" }), "role_uid");

    const custom = await invite(team, { roleUid: orgRole, ttl: "60s" });
    expect(custom["role"]).toEqual({ uid: orgRole, name: "org-reader", description: "org-reader role" });
    const builtIn = await invite(team, { roleUid: "viewer", ttl: "60s" });
    const list = await call("GET", `${BASE}?uidp.children_of=${team}&order_by=create_time`);
    expect((list.body["groupInvites"] as JsonObject[]).map((i) => i["role"])).toEqual([custom["role"], VIEWER]);
    expect((await call("GET", `${BASE}/${builtIn["uid"]}`)).body["role"]).toEqual(VIEWER);

    // A role a pending invite grants cannot be deleted.
    expectPrecondition(await call("DELETE", `/iam/v2beta1/roles/${orgRole}`), "RESOURCE_IN_USE");
  });

  it("has no update: PATCH is 405", async () => {
    const g = await group("inv-patch");
    const created = await invite(g, { roleUid: "viewer", ttl: "60s" });
    const res = await call("PATCH", `${BASE}/${created["uid"]}`, { email: "x@example.com" });
    expect(res.status).toBe(405);
    expect(res.body["code"]).toBe(12);
  });

  it("lists by scope, newest first on request; order_by name is refused", async () => {
    const root = await group("inv-list");
    const child = await group("child", root);
    const first = await invite(root, { roleUid: "viewer", ttl: "60s" });
    server.clock.advance(1000);
    const second = await invite(child, { roleUid: "viewer", ttl: "60s" });
    const uids = async (query: string) =>
      ((await call("GET", `${BASE}?${query}`)).body["groupInvites"] as JsonObject[]).map((i) => i["uid"]);
    expect(await uids(`uidp.descendants_of=${root}&order_by=create_time%20desc`)).toEqual([second["uid"], first["uid"]]);
    expect(await uids(`uidp.children_of=${root}`)).toEqual([first["uid"]]);
    expectInvalid(await call("GET", `${BASE}?order_by=name`), "order_by");
  });

  it("is NOT_FOUND for a group that does not exist", async () => {
    const res = await call("POST", `${BASE}/${"0".repeat(40)}`, { roleUid: "viewer", ttl: "60s" });
    expect(res.status).toBe(404);
  });

  it("keeps a group with an invite from being deleted (RESOURCE_NOT_EMPTY)", async () => {
    const g = await group("inv-holder");
    const created = await invite(g, { roleUid: "viewer", ttl: "60s" });
    expect(expectPrecondition(await call("DELETE", `/iam/v2beta1/groups/${g}`), "RESOURCE_NOT_EMPTY")).toMatch(/group invites/);
    expect((await call("DELETE", `${BASE}/${created["uid"]}`)).status).toBe(200);
    expect((await call("GET", `${BASE}/${created["uid"]}`)).status).toBe(404);
    expect((await call("DELETE", `/iam/v2beta1/groups/${g}`)).status).toBe(200);
  });
});

describe("group invites over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(() => server, "platform.iam.v2beta1.GroupInvitesService", "platform/iam/v2beta1/group_invites.proto");

  it("returns the code on create only, with the role hydrated", async () => {
    const g = await group("inv-grpc");
    const created = await rpc<JsonObject>("CreateGroupInvite", {
      parent: g,
      group_invite: { role_uid: "viewer", ttl: { seconds: "120" } },
    });
    expect(created["code"]).toMatch(CODE);
    expect(created["role"]).toEqual(VIEWER);
    const got = await rpc<JsonObject>("GetGroupInvite", { uid: created["uid"] });
    const list = await rpc<JsonObject>("ListGroupInvites", { uidp: { children_of: g } });
    expect((list["group_invites"] as JsonObject[]).map((i) => i["role"])).toEqual([VIEWER]);
    for (const res of [got, list]) {
      expect(JSON.stringify(res)).not.toContain(created["code"] as string);
      expect(JSON.stringify(res)).not.toContain('"code"');
    }
    await rpc("DeleteGroupInvite", { uid: created["uid"] });
    expect((await failure(rpc("GetGroupInvite", { uid: created["uid"] }))).code).toBe(5);
  });

  it("names the ttl in its error", async () => {
    const g = await group("inv-grpc-bad");
    const err = await failure(
      rpc("CreateGroupInvite", { parent: g, group_invite: { role_uid: "viewer", ttl: { seconds: String(31 * 86400) } } }),
    );
    expect(err.code).toBe(3);
    expect(grpcStatusDetails(err).message).toMatch(/^Invalid argument: ttl: /);
  });
});

describe("group invites over Connect", () => {
  it("returns the code on create only, with the role hydrated", async () => {
    const client = connectClient(GroupInvitesService, server.url, server.token);
    const g = await group("inv-connect");
    const created = await client.createGroupInvite({
      parent: g,
      groupInvite: { roleUid: "viewer", ttl: { seconds: 60n }, singleUse: true },
    });
    expect(created.code).toMatch(CODE);
    expect(created.ttl).toBeUndefined();
    expect(created.role).toMatchObject(VIEWER);
    const got = await client.getGroupInvite({ uid: created.uid });
    expect(got.code).toBeUndefined();
    expect(got.singleUse).toBe(true);
    const list = await client.listGroupInvites({ uidp: { childrenOf: g } });
    expect(list.groupInvites.map((i) => [i.code, i.role?.name])).toEqual([[undefined, "viewer"]]);

    const err = await connectFailure(client.createGroupInvite({ parent: g, groupInvite: { roleUid: "viewer" } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("ttl");
  });
});
