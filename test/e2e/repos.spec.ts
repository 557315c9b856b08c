import { Code } from "@connectrpc/connect";
import grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema, PreconditionFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { ReposService } from "../../gen/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../gen/platform/registry/v2beta1/tags_pb.js";
import { connectClient, grpcStatusDetails, type JsonObject, type Protocol, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { connectFailure } from "../support/connect-failure.js";
import { ok as okBody, restDetail } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const REPO_NAME_RULE = "must match the pattern ^[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*)*$";
const DIGEST_A = `sha256:${"a".repeat(64)}`;

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const ok = (method: string, path: string, body?: unknown) => okBody(call(method, path, body));

let groupCount = 0;
async function newGroup(): Promise<string> {
  return (await ok("POST", "/iam/v2beta1/groups", { name: `org-${groupCount++}` }))["uid"] as string;
}
const newRepo = async (group: string, body: JsonObject) => ok("POST", `/registry/v2beta1/repos/${group}`, body);
const newTag = async (repo: string, name: string, deprecated = false) =>
  ok("POST", `/registry/v2beta1/tags/${repo}`, { name, digest: DIGEST_A, deprecated });

describe("repos over REST", () => {
  it("creates a repo in a group with the documented shape", async () => {
    const group = await newGroup();
    const repo = await newRepo(group, { name: "library/nginx", description: "web", aliases: ["nginx", "web/nginx"] });
    expect(repo["uid"]).toMatch(new RegExp(`^${group}/[0-9a-f]{16}$`));
    expect(repo).toMatchObject({ name: "library/nginx", description: "web", aliases: ["nginx", "web/nginx"], activeTags: [] });
    expect(repo["createTime"]).toMatch(TIMESTAMP);
    expect(repo["updateTime"]).toBe(repo["createTime"]);
    expect(Object.keys(repo).sort()).toEqual(["activeTags", "aliases", "createTime", "description", "name", "uid", "updateTime"]);
    expect(await ok("GET", `/registry/v2beta1/repos/${repo["uid"]}`)).toEqual(repo);
  });

  it("ignores output-only fields in a create body", async () => {
    const group = await newGroup();
    const repo = await newRepo(group, { name: "sneaky", uid: "x", activeTags: ["latest"], createTime: "2001-01-01T00:00:00Z" });
    expect(repo["activeTags"]).toEqual([]);
    expect(repo["uid"]).toMatch(new RegExp(`^${group}/`));
    expect(repo["createTime"]).not.toBe("2001-01-01T00:00:00.000Z");
  });

  it.each([
    ["a missing name", {}],
    ["upper case", { name: "Nginx" }],
    ["a leading separator", { name: "-nginx" }],
    ["a trailing separator", { name: "nginx." }],
    ["an empty path component", { name: "library//nginx" }],
    ["three underscores", { name: "a___b" }],
    ["a space", { name: "my repo" }],
  ])("rejects %s with INVALID_ARGUMENT on name stating the pattern", async (_label, body) => {
    const res = await call("POST", `/registry/v2beta1/repos/${await newGroup()}`, body);
    expect(res.status).toBe(400);
    expect(res.body["code"]).toBe(3);
    expect(res.body["message"]).toBe(`Invalid argument: name: ${REPO_NAME_RULE}`);
    expect(restDetail(res, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "name", description: REPO_NAME_RULE }] });
    expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "registry.localhost" });
  });

  it("accepts every separator the OCI grammar allows, up to 255 characters", async () => {
    const group = await newGroup();
    for (const name of ["a.b", "a_b", "a__b", "a---b", "a/b/c", "x".repeat(255)]) {
      expect((await call("POST", `/registry/v2beta1/repos/${group}`, { name })).status, name).toBe(200);
    }
    const long = await call("POST", `/registry/v2beta1/repos/${group}`, { name: "y".repeat(256) });
    expect(long.status).toBe(400);
    expect(restDetail(long, "BadRequest")).toMatchObject({
      fieldViolations: [{ field: "name", description: "must be at most 255 characters" }],
    });
  });

  it("validates each alias like a name and refuses repeats", async () => {
    const group = await newGroup();
    const bad = await call("POST", `/registry/v2beta1/repos/${group}`, { name: "ok", aliases: ["fine", "Not Fine"] });
    expect(bad.status).toBe(400);
    expect(restDetail(bad, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "aliases[1]", description: REPO_NAME_RULE }] });
    const twice = await call("POST", `/registry/v2beta1/repos/${group}`, { name: "ok", aliases: ["same", "same"] });
    expect(twice.status).toBe(400);
    expect(restDetail(twice, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "aliases[1]", description: 'repeats "same"' }] });
  });

  it("limits the description and the number of aliases", async () => {
    const group = await newGroup();
    const long = await call("POST", `/registry/v2beta1/repos/${group}`, { name: "d", description: "x".repeat(4097) });
    expect(long.status).toBe(400);
    expect(restDetail(long, "BadRequest")).toMatchObject({
      fieldViolations: [{ field: "description", description: "must be at most 4096 characters" }],
    });
    const many = await call("POST", `/registry/v2beta1/repos/${group}`, {
      name: "d",
      aliases: Array.from({ length: 51 }, (_, i) => `a${i}`),
    });
    expect(many.status).toBe(400);
    expect(restDetail(many, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "aliases", description: "at most 50 aliases" }] });
  });

  it("keeps names unique within a group: ALREADY_EXISTS, on create and on rename", async () => {
    const group = await newGroup();
    await newRepo(group, { name: "app" });
    const dup = await call("POST", `/registry/v2beta1/repos/${group}`, { name: "app" });
    expect(dup.status).toBe(409);
    expect(dup.body["code"]).toBe(6);
    expect(dup.body["message"]).toBe('Already exists: a repo named "app" already exists in this group');
    expect(restDetail(dup, "ErrorInfo")).toMatchObject({ reason: "ALREADY_EXISTS", domain: "registry.localhost" });
    // the same name in another group is fine
    await newRepo(await newGroup(), { name: "app" });
    const other = await newRepo(group, { name: "other" });
    const rename = await call("PATCH", `/registry/v2beta1/repos/${other["uid"]}`, { name: "app" });
    expect(rename.status).toBe(409);
  });

  it("creating in a missing group is NOT_FOUND; a request without a group has no route", async () => {
    const res = await call("POST", `/registry/v2beta1/repos/${"0".repeat(40)}`, { name: "orphan" });
    expect(res.status).toBe(404);
    expect(restDetail(res, "ResourceInfo")).toMatchObject({ resourceType: "group", resourceName: "0".repeat(40) });
    expect((await call("POST", "/registry/v2beta1/repos", { name: "x" })).status).toBe(405);
    const missing = await call("GET", `/registry/v2beta1/repos/${"0".repeat(40)}/0000000000000000`);
    expect(missing.status).toBe(404);
    expect(restDetail(missing, "ResourceInfo")).toMatchObject({ resourceType: "repo" });
  });

  it("updates exactly the fields in the body, or those in updateMask", async () => {
    const group = await newGroup();
    const repo = await newRepo(group, { name: "upd", description: "keep", aliases: ["a1"] });
    server.clock.advance(1000);
    const patched = await ok("PATCH", `/registry/v2beta1/repos/${repo["uid"]}`, { aliases: ["a2", "a3"] });
    expect(patched).toMatchObject({ name: "upd", description: "keep", aliases: ["a2", "a3"], createTime: repo["createTime"] });
    expect(patched["updateTime"]).not.toBe(repo["updateTime"]);
    const masked = await ok("PATCH", `/registry/v2beta1/repos/${repo["uid"]}?updateMask=description`, {
      name: "ignored",
      description: "new",
    });
    expect(masked).toMatchObject({ name: "upd", description: "new", aliases: ["a2", "a3"] });
    const refused = await call("PATCH", `/registry/v2beta1/repos/${repo["uid"]}?updateMask=active_tags`, { activeTags: ["x"] });
    expect(refused.status).toBe(400);
    expect(restDetail(refused, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "update_mask" }] });
    const badName = await call("PATCH", `/registry/v2beta1/repos/${repo["uid"]}`, { name: "BAD" });
    expect(badName.status).toBe(400);
  });

  it("lists with the spec's envelope, scopes, name filter, order and paging", async () => {
    const group = await newGroup();
    const child = (await ok("POST", `/iam/v2beta1/groups/${group}`, { name: "team" }))["uid"] as string;
    const names = ["delta", "alpha", "charlie", "bravo", "echo"];
    for (const name of names) {
      await newRepo(group, { name });
      server.clock.advance(1000);
    }
    await newRepo(child, { name: "nested" });

    const top = await ok("GET", `/registry/v2beta1/repos?uidp.children_of=${group}`);
    expect(Object.keys(top).sort()).toEqual(["nextPageToken", "repos", "skipped", "totalCount"]);
    expect(top).toMatchObject({ totalCount: "5", nextPageToken: "", skipped: 0 });

    const seen: string[] = [];
    let token = "";
    for (let i = 0; i < 5; i++) {
      const page = await ok(
        "GET",
        `/registry/v2beta1/repos?uidp.descendants_of=${group}&order_by=name%20desc&page_size=2${token ? `&page_token=${encodeURIComponent(token)}` : ""}`,
      );
      expect(page["totalCount"]).toBe("6");
      seen.push(...(page["repos"] as JsonObject[]).map((r) => r["name"] as string));
      token = page["nextPageToken"] as string;
      if (!token) break;
    }
    expect(seen).toEqual([...names, "nested"].sort().reverse());

    const byTime = await ok("GET", `/registry/v2beta1/repos?uidp.children_of=${group}&orderBy=created_at&skip=3`);
    expect((byTime["repos"] as JsonObject[]).map((r) => r["name"])).toEqual(["bravo", "echo"]);
    expect(byTime["skipped"]).toBe(3);
    const named = await ok("GET", `/registry/v2beta1/repos?uidp.in_root=${group}&name=nested`);
    expect((named["repos"] as JsonObject[]).map((r) => r["name"])).toEqual(["nested"]);
    const badOrder = await call("GET", "/registry/v2beta1/repos?order_by=digest");
    expect(badOrder.status).toBe(400);
    expect(restDetail(badOrder, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "order_by" }] });
  });

  it("reports activeTags: the repo's non-deprecated tag names, sorted, on list, get and update", async () => {
    const group = await newGroup();
    const web = await newRepo(group, { name: "web" });
    const api = await newRepo(group, { name: "api" });
    await newRepo(group, { name: "empty" });
    await newTag(web["uid"] as string, "v2");
    await newTag(web["uid"] as string, "latest");
    const old = await newTag(web["uid"] as string, "v1", true);
    await newTag(api["uid"] as string, "stable");

    const list = await ok("GET", `/registry/v2beta1/repos?uidp.children_of=${group}&order_by=name`);
    expect((list["repos"] as JsonObject[]).map((r) => [r["name"], r["activeTags"]])).toEqual([
      ["api", ["stable"]],
      ["empty", []],
      ["web", ["latest", "v2"]],
    ]);
    await ok("PATCH", `/registry/v2beta1/tags/${old["uid"]}`, { deprecated: false });
    expect((await ok("GET", `/registry/v2beta1/repos/${web["uid"]}`))["activeTags"]).toEqual(["latest", "v1", "v2"]);
    const updated = await ok("PATCH", `/registry/v2beta1/repos/${web["uid"]}`, { description: "d" });
    expect(updated["activeTags"]).toEqual(["latest", "v1", "v2"]);
  });

  it("refuses to delete a repo that still holds tags (RESOURCE_NOT_EMPTY), then deletes it once empty", async () => {
    const group = await newGroup();
    const repo = await newRepo(group, { name: "busy" });
    const tag = await newTag(repo["uid"] as string, "latest");
    const res = await call("DELETE", `/registry/v2beta1/repos/${repo["uid"]}`);
    expect(res.status).toBe(400);
    expect(res.body["code"]).toBe(9);
    expect(res.body["message"]).toBe(`Precondition failed: repo ${repo["uid"]} still holds tags; delete them first`);
    expect(restDetail(res, "PreconditionFailure")).toMatchObject({ violations: [{ type: "RESOURCE_NOT_EMPTY", subject: repo["uid"] }] });
    expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "FAILED_PRECONDITION", domain: "registry.localhost" });

    expect(await ok("DELETE", `/registry/v2beta1/tags/${tag["uid"]}`)).toEqual({});
    expect(await ok("DELETE", `/registry/v2beta1/repos/${repo["uid"]}`)).toEqual({});
    expect((await call("GET", `/registry/v2beta1/repos/${repo["uid"]}`)).status).toBe(404);
    expect((await call("DELETE", `/registry/v2beta1/repos/${repo["uid"]}`)).status).toBe(404);
  });

  it("refuses to delete a group that holds a repo with the spec's typed error", async () => {
    const group = await newGroup();
    const repo = await newRepo(group, { name: "keeps-group" });
    const res = await call("DELETE", `/iam/v2beta1/groups/${group}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      code: 9,
      message: `Precondition failed: group ${group} still holds repos; delete them first`,
      details: [
        {
          "@type": "type.googleapis.com/google.rpc.PreconditionFailure",
          violations: [{ type: "RESOURCE_NOT_EMPTY", subject: group, description: `group ${group} still holds repos; delete them first` }],
        },
        { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "FAILED_PRECONDITION", domain: "iam.localhost" },
      ],
    });
    await ok("DELETE", `/registry/v2beta1/repos/${repo["uid"]}`);
    expect(await ok("DELETE", `/iam/v2beta1/groups/${group}`)).toEqual({});
  });

  it("never leaves an orphan tag when a tag create races the repo delete", async () => {
    const group = await newGroup();
    for (let round = 0; round < 5; round++) {
      const repo = await newRepo(group, { name: `race-${round}` });
      const [del, made] = await Promise.all([
        call("DELETE", `/registry/v2beta1/repos/${repo["uid"]}`),
        call("POST", `/registry/v2beta1/tags/${repo["uid"]}`, { name: "late", digest: DIGEST_A }),
      ]);
      const repoGone = (await call("GET", `/registry/v2beta1/repos/${repo["uid"]}`)).status === 404;
      if (made.status === 200) {
        expect(del.status).toBe(400);
        expect(del.body["code"]).toBe(9);
        expect(repoGone).toBe(false);
      } else {
        expect(made.status).toBe(404);
        expect(made.body["code"]).toBe(5);
        expect(del.status).toBe(200);
        expect(repoGone).toBe(true);
      }
    }
  });
});

interface RepoMsg {
  uid: string;
  name: string;
  description: string;
  aliases: string[];
  active_tags: string[];
}

describe("repos over gRPC (@grpc/grpc-js)", () => {
  const { rpc: repos, failure } = grpcSuite(
    () => server,
    "platform.registry.v2beta1.ReposService",
    "platform/registry/v2beta1/repos.proto",
  );
  const { rpc: groups } = grpcSuite(() => server, "platform.iam.v2beta1.GroupsService", "platform/iam/v2beta1/groups.proto");

  it("creates, gets, lists, updates with a mask and deletes", async () => {
    const group = await newGroup();
    const repo = await repos<RepoMsg>("CreateRepo", { parent: group, repo: { name: "grpc/app", aliases: ["app"] } });
    expect(repo).toMatchObject({ name: "grpc/app", aliases: ["app"], active_tags: [] });
    expect(await repos("GetRepo", { uid: repo.uid })).toEqual(repo);
    const list = await repos<{ repos: RepoMsg[]; total_count: string }>("ListRepos", { uidp: { children_of: group } });
    expect(list.repos.map((r) => r.uid)).toEqual([repo.uid]);
    expect(list.total_count).toBe("1");
    const masked = await repos<RepoMsg>("UpdateRepo", {
      repo: { uid: repo.uid, name: "ignored", description: "d" },
      update_mask: { paths: ["description"] },
    });
    expect(masked).toMatchObject({ name: "grpc/app", description: "d" });
    await repos("DeleteRepo", { uid: repo.uid });
    expect((await failure(repos("GetRepo", { uid: repo.uid }))).code).toBe(grpc.status.NOT_FOUND);
  });

  it("sends typed errors in grpc-status-details-bin", async () => {
    const group = await newGroup();
    const bad = await failure(repos("CreateRepo", { parent: group, repo: { name: "UPPER" } }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = grpcStatusDetails(bad);
    expect(status.message).toBe(`Invalid argument: name: ${REPO_NAME_RULE}`);
    expect(status.details.map((d) => d.type)).toEqual(["google.rpc.BadRequest", "google.rpc.ErrorInfo"]);
    expect(status.details[1]!.value).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "registry.localhost" });

    const noParent = await failure(repos("CreateRepo", { repo: { name: "ok" } }));
    expect(grpcStatusDetails(noParent).details[0]!.value).toMatchObject({
      fieldViolations: [{ field: "parent", description: "is required" }],
    });

    await repos("CreateRepo", { parent: group, repo: { name: "held" } });
    const notEmpty = await failure(groups("DeleteGroup", { uid: group }));
    expect(notEmpty.code).toBe(grpc.status.FAILED_PRECONDITION);
    const s = grpcStatusDetails(notEmpty);
    expect(s.message).toBe(`Precondition failed: group ${group} still holds repos; delete them first`);
    expect(s.details[0]).toMatchObject({
      type: "google.rpc.PreconditionFailure",
      value: { violations: [{ type: "RESOURCE_NOT_EMPTY", subject: group }] },
    });
    expect(s.details[1]).toMatchObject({ type: "google.rpc.ErrorInfo", value: { reason: "FAILED_PRECONDITION", domain: "iam.localhost" } });
  });
});

describe.each<Protocol>(["connect", "grpc-web", "grpc"])("repos over %s (Connect client)", (protocol) => {
  it("creates, lists with activeTags, updates and deletes", async () => {
    const client = connectClient(ReposService, server.url, server.token, protocol);
    const tagsClient = connectClient(TagsService, server.url, server.token, protocol);
    const group = await newGroup();
    const repo = await client.createRepo({ parent: group, repo: { name: `${protocol}-repo` } });
    await tagsClient.createTag({ parent: repo.uid, tag: { name: "latest", digest: DIGEST_A } });
    const list = await client.listRepos({ uidp: { childrenOf: group } });
    expect(list.repos.map((r) => [r.name, r.activeTags])).toEqual([[`${protocol}-repo`, ["latest"]]]);
    expect(list.totalCount).toBe(1n);
    const updated = await client.updateRepo({ repo: { uid: repo.uid, aliases: ["x"] }, updateMask: { paths: ["aliases"] } });
    expect(updated.aliases).toEqual(["x"]);
    expect(updated.activeTags).toEqual(["latest"]);

    const busy = await connectFailure(client.deleteRepo({ uid: repo.uid }));
    expect(busy.code).toBe(Code.FailedPrecondition);
    expect(busy.findDetails(PreconditionFailureSchema)[0]?.violations[0]?.type).toBe("RESOURCE_NOT_EMPTY");
    expect(busy.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "FAILED_PRECONDITION", domain: "registry.localhost" });
  });

  it("carries typed errors, including the non-empty group", async () => {
    const client = connectClient(ReposService, server.url, server.token, protocol);
    const groups = connectClient(GroupsService, server.url, server.token, protocol);
    const group = await newGroup();
    const bad = await connectFailure(client.createRepo({ parent: group, repo: { name: "a//b" } }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.findDetails(BadRequestSchema)[0]?.fieldViolations[0]).toMatchObject({ field: "name", description: REPO_NAME_RULE });
    await client.createRepo({ parent: group, repo: { name: "dup" } });
    expect((await connectFailure(client.createRepo({ parent: group, repo: { name: "dup" } }))).code).toBe(Code.AlreadyExists);
    const notEmpty = await connectFailure(groups.deleteGroup({ uid: group }));
    expect(notEmpty.code).toBe(Code.FailedPrecondition);
    expect(notEmpty.rawMessage).toBe(`Precondition failed: group ${group} still holds repos; delete them first`);
    expect(notEmpty.findDetails(PreconditionFailureSchema)[0]?.violations[0]).toMatchObject({ type: "RESOURCE_NOT_EMPTY", subject: group });
    expect(notEmpty.findDetails(ErrorInfoSchema)[0]).toMatchObject({ reason: "FAILED_PRECONDITION", domain: "iam.localhost" });
  });
});
