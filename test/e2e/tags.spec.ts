import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { TagsService } from "../../gen/platform/registry/v2beta1/tags_pb.js";
import {
  connectClient,
  grpcStatusDetails,
  type JsonObject,
  type Protocol,
  type RestResponse,
  type RestClient,
} from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import { connectFailure } from "../support/connect-failure.js";
import { expectInvalid, ok as okBody, restDetail } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const TAG_NAME_RULE = "must match the pattern ^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$";
const DIGEST_RULE = "must be sha256: followed by 64 lower-case hex characters";
const digest = (c: string) => `sha256:${c.repeat(64)}`;

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const ok = (method: string, path: string, body?: unknown) => okBody(call(method, path, body));

let count = 0;
/** A fresh group holding a fresh repo. */
async function newRepo(): Promise<{ group: string; repo: string }> {
  const group = (await ok("POST", "/iam/v2beta1/groups", { name: `tags-org-${count++}` }))["uid"] as string;
  const repo = (await ok("POST", `/registry/v2beta1/repos/${group}`, { name: "app" }))["uid"] as string;
  return { group, repo };
}
const newTag = (repo: string, body: JsonObject) => ok("POST", `/registry/v2beta1/tags/${repo}`, body);

function expectViolation(res: RestResponse, field: string, description: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body["code"]).toBe(3);
  expect(res.body["message"]).toBe(`Invalid argument: ${field}: ${description}`);
  expect(restDetail(res, "BadRequest")).toMatchObject({ fieldViolations: [{ field, description }] });
  expect(restDetail(res, "ErrorInfo")).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "registry.localhost" });
}

/** Every tag name a filtered, paged list returns, following next page tokens. */
async function listAll(query: string, pageSize: number): Promise<{ names: string[]; pages: number; totals: string[] }> {
  const names: string[] = [];
  const totals: string[] = [];
  let token = "";
  let pages = 0;
  do {
    const page = await ok(
      "GET",
      `/registry/v2beta1/tags?${query}&page_size=${pageSize}${token ? `&page_token=${encodeURIComponent(token)}` : ""}`,
    );
    pages++;
    totals.push(page["totalCount"] as string);
    names.push(...(page["tags"] as JsonObject[]).map((t) => t["name"] as string));
    token = page["nextPageToken"] as string;
  } while (token && pages < 20);
  return { names, pages, totals };
}

describe("tags over REST", () => {
  it("creates a tag inside its repo with the documented shape", async () => {
    const { repo } = await newRepo();
    const tag = await newTag(repo, { name: "v1.2.3", digest: digest("a") });
    expect(tag["uid"]).toMatch(new RegExp(`^${repo}/[0-9a-f]{16}$`));
    expect(tag).toMatchObject({ name: "v1.2.3", digest: digest("a"), deprecated: false });
    expect(tag["createTime"]).toMatch(TIMESTAMP);
    expect(Object.keys(tag).sort()).toEqual(["createTime", "deprecated", "digest", "name", "uid", "updateTime"]);
    expect(await ok("GET", `/registry/v2beta1/tags/${tag["uid"]}`)).toEqual(tag);
  });

  it.each([
    ["a missing name", {}],
    ["a leading dot", { name: ".hidden" }],
    ["a leading dash", { name: "-x" }],
    ["a slash", { name: "a/b" }],
    ["129 characters", { name: "t".repeat(129) }],
  ])("rejects %s with INVALID_ARGUMENT on name", async (_label, body) => {
    const { repo } = await newRepo();
    expectViolation(await call("POST", `/registry/v2beta1/tags/${repo}`, { digest: digest("a"), ...body }), "name", TAG_NAME_RULE);
  });

  it("accepts the OCI tag alphabet up to 128 characters", async () => {
    const { repo } = await newRepo();
    for (const name of ["_x", "Latest", "1.0.0-rc.1_b", "t".repeat(128)]) await newTag(repo, { name, digest: digest("b") });
  });

  it.each([
    ["missing", undefined],
    ["upper-case hex", `sha256:${"A".repeat(64)}`],
    ["63 hex characters", `sha256:${"a".repeat(63)}`],
    ["65 hex characters", `sha256:${"a".repeat(65)}`],
    ["another algorithm", `sha512:${"a".repeat(64)}`],
    ["no algorithm", "a".repeat(64)],
  ])("rejects a digest that is %s with INVALID_ARGUMENT on digest", async (_label, d) => {
    const { repo } = await newRepo();
    expectViolation(await call("POST", `/registry/v2beta1/tags/${repo}`, { name: "latest", digest: d }), "digest", DIGEST_RULE);
  });

  it("keeps names unique within a repo: ALREADY_EXISTS", async () => {
    const { group, repo } = await newRepo();
    await newTag(repo, { name: "latest", digest: digest("a") });
    const dup = await call("POST", `/registry/v2beta1/tags/${repo}`, { name: "latest", digest: digest("b") });
    expect(dup.status).toBe(409);
    expect(dup.body["code"]).toBe(6);
    expect(dup.body["message"]).toBe('Already exists: a tag named "latest" already exists in this repo');
    const other = (await ok("POST", `/registry/v2beta1/repos/${group}`, { name: "other" }))["uid"] as string;
    await newTag(other, { name: "latest", digest: digest("b") });
  });

  it("needs an existing repo as parent: a group or a missing repo is NOT_FOUND repo", async () => {
    const { group, repo } = await newRepo();
    // A parent that is not even a uid is refused before any lookup.
    expectInvalid(await call("POST", `/registry/v2beta1/tags/${repo}0`, { name: "x", digest: digest("a") }), "parent");
    for (const parent of [group, `${group}/ffffffffffffffff`]) {
      const res = await call("POST", `/registry/v2beta1/tags/${parent}`, { name: "x", digest: digest("a") });
      expect(res.status, parent).toBe(404);
      expect(restDetail(res, "ResourceInfo")).toMatchObject({ resourceType: "repo", resourceName: parent });
    }
    const missing = await call("GET", `/registry/v2beta1/tags/${repo}/0000000000000000`);
    expect(missing.status).toBe(404);
    expect(restDetail(missing, "ResourceInfo")).toMatchObject({ resourceType: "tag" });
  });

  it("moves a tag to another digest, deprecates it, and validates updates", async () => {
    const { repo } = await newRepo();
    const tag = await newTag(repo, { name: "latest", digest: digest("a") });
    server.clock.advance(1000);
    const moved = await ok("PATCH", `/registry/v2beta1/tags/${tag["uid"]}`, { digest: digest("c") });
    expect(moved).toMatchObject({ name: "latest", digest: digest("c"), deprecated: false, createTime: tag["createTime"] });
    expect(moved["updateTime"]).not.toBe(tag["updateTime"]);
    const masked = await ok("PATCH", `/registry/v2beta1/tags/${tag["uid"]}?updateMask=deprecated`, {
      deprecated: true,
      digest: digest("d"),
    });
    expect(masked).toMatchObject({ digest: digest("c"), deprecated: true });
    expectViolation(await call("PATCH", `/registry/v2beta1/tags/${tag["uid"]}`, { digest: "sha256:nope" }), "digest", DIGEST_RULE);
    expectViolation(await call("PATCH", `/registry/v2beta1/tags/${tag["uid"]}`, { name: "a b" }), "name", TAG_NAME_RULE);
    expect(await ok("DELETE", `/registry/v2beta1/tags/${tag["uid"]}`)).toEqual({});
    expect((await call("GET", `/registry/v2beta1/tags/${tag["uid"]}`)).status).toBe(404);
  });

  describe("listing", () => {
    let group: string;
    let repo: string;
    let other: string;
    let since: string;
    // 7 tags in `repo`: t0..t6, with t0, t2, t4, t6 on digest a; t5 and t6 changed late.
    beforeAll(async () => {
      ({ group, repo } = await newRepo());
      other = (await ok("POST", `/registry/v2beta1/repos/${group}`, { name: "other" }))["uid"] as string;
      const made: JsonObject[] = [];
      for (let i = 0; i < 7; i++) {
        made.push(await newTag(repo, { name: `t${i}`, digest: digest(i % 2 ? "b" : "a") }));
        server.clock.advance(1000);
      }
      await newTag(other, { name: "t0", digest: digest("a") });
      server.clock.advance(60_000);
      since = new Date(server.clock.now()).toISOString();
      server.clock.advance(1000);
      for (const t of [made[5]!, made[6]!]) await ok("PATCH", `/registry/v2beta1/tags/${t["uid"]}`, { deprecated: true });
    });

    it("scopes by repo (children_of) and by group (descendants_of)", async () => {
      expect((await listAll(`uidp.children_of=${repo}&order_by=name`, 50)).names).toEqual(["t0", "t1", "t2", "t3", "t4", "t5", "t6"]);
      expect((await listAll(`uidp.descendants_of=${group}&order_by=name`, 50)).names).toEqual([
        "t0",
        "t0",
        "t1",
        "t2",
        "t3",
        "t4",
        "t5",
        "t6",
      ]);
      expect((await listAll(`uidp.descendants_of=${repo}&order_by=name`, 50)).names).toHaveLength(7);
    });

    it("filters by name", async () => {
      const res = await ok("GET", `/registry/v2beta1/tags?uidp.descendants_of=${group}&name=t0`);
      expect((res["tags"] as JsonObject[]).map((t) => t["uid"] as string).every((u) => u.startsWith(group))).toBe(true);
      expect(res["totalCount"]).toBe("2");
    });

    it("filters by digest across pages with a stable total", async () => {
      const { names, pages, totals } = await listAll(`uidp.children_of=${repo}&digest=${digest("a")}&order_by=name`, 3);
      expect(names).toEqual(["t0", "t2", "t4", "t6"]);
      expect(pages).toBe(2);
      expect(totals).toEqual(["4", "4"]);
      expect((await listAll(`uidp.descendants_of=${group}&digest=${digest("b")}`, 2)).names.sort()).toEqual(["t1", "t3", "t5"]);
    });

    it("filters by updatedSince (JSON or proto name) across pages", async () => {
      for (const param of ["updatedSince", "updated_since"]) {
        const { names, totals } = await listAll(`uidp.children_of=${repo}&${param}=${since}&order_by=update_time`, 1);
        expect(names, param).toEqual(["t5", "t6"]);
        expect(totals).toEqual(["2", "2"]);
      }
      const both = await listAll(`uidp.children_of=${repo}&updatedSince=${since}&digest=${digest("a")}`, 50);
      expect(both.names).toEqual(["t6"]);
      const future = await ok("GET", `/registry/v2beta1/tags?updatedSince=2999-01-01T00:00:00Z`);
      expect(future).toMatchObject({ tags: [], totalCount: "0", nextPageToken: "" });
    });

    it("binds page tokens to the filter", async () => {
      const first = await ok("GET", `/registry/v2beta1/tags?uidp.children_of=${repo}&digest=${digest("a")}&page_size=1`);
      const token = encodeURIComponent(first["nextPageToken"] as string);
      const other = await call(
        "GET",
        `/registry/v2beta1/tags?uidp.children_of=${repo}&digest=${digest("b")}&page_size=1&page_token=${token}`,
      );
      expect(other.status).toBe(400);
      expect(restDetail(other, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "page_token" }] });
      const later = await call(
        "GET",
        `/registry/v2beta1/tags?uidp.children_of=${repo}&digest=${digest("a")}&updatedSince=${since}&page_size=1&page_token=${token}`,
      );
      expect(later.status).toBe(400);
    });

    it("rejects a malformed digest or updatedSince filter", async () => {
      expectViolation(await call("GET", "/registry/v2beta1/tags?digest=sha256:short"), "digest", DIGEST_RULE);
      const res = await call("GET", "/registry/v2beta1/tags?updatedSince=yesterday");
      expect(res.status).toBe(400);
      expect(restDetail(res, "BadRequest")).toMatchObject({ fieldViolations: [{ field: "updatedSince" }] });
    });
  });
});

interface TagMsg {
  uid: string;
  name: string;
  digest: string;
  deprecated: boolean;
}

describe("tags over gRPC (@grpc/grpc-js)", () => {
  const { rpc, failure } = grpcSuite(() => server, "platform.registry.v2beta1.TagsService", "platform/registry/v2beta1/tags.proto");

  it("creates, filters by digest and updated_since, updates and deletes", async () => {
    const { repo } = await newRepo();
    const a = await rpc<TagMsg>("CreateTag", { parent: repo, tag: { name: "a", digest: digest("1") } });
    server.clock.advance(5000);
    const cut = timestampFromDate(new Date(server.clock.now()));
    const b = await rpc<TagMsg>("CreateTag", { parent: repo, tag: { name: "b", digest: digest("2") } });
    expect(b).toMatchObject({ name: "b", digest: digest("2"), deprecated: false });
    const byDigest = await rpc<{ tags: TagMsg[]; total_count: string }>("ListTags", { uidp: { children_of: repo }, digest: digest("1") });
    expect(byDigest.tags.map((t) => t.uid)).toEqual([a.uid]);
    const recent = await rpc<{ tags: TagMsg[] }>("ListTags", {
      uidp: { children_of: repo },
      updated_since: { seconds: String(cut.seconds), nanos: cut.nanos },
    });
    expect(recent.tags.map((t) => t.uid)).toEqual([b.uid]);
    const updated = await rpc<TagMsg>("UpdateTag", { tag: { uid: a.uid, deprecated: true }, update_mask: { paths: ["deprecated"] } });
    expect(updated).toMatchObject({ name: "a", deprecated: true });
    await rpc("DeleteTag", { uid: a.uid });
    await expect(rpc("GetTag", { uid: a.uid })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it("sends INVALID_ARGUMENT on digest in grpc-status-details-bin", async () => {
    const { repo } = await newRepo();
    const err = await failure(rpc("CreateTag", { parent: repo, tag: { name: "x", digest: "sha256:abc" } }));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = grpcStatusDetails(err);
    expect(status.message).toBe(`Invalid argument: digest: ${DIGEST_RULE}`);
    expect(status.details[0]!.value).toMatchObject({ fieldViolations: [{ field: "digest", description: DIGEST_RULE }] });
    expect(status.details[1]!.value).toMatchObject({ reason: "INVALID_ARGUMENT", domain: "registry.localhost" });
  });
});

describe.each<Protocol>(["connect", "grpc-web", "grpc"])("tags over %s (Connect client)", (protocol) => {
  it("creates, lists by digest and updatedSince, and reports typed errors", async () => {
    const client = connectClient(TagsService, server.url, server.token, protocol);
    const { repo } = await newRepo();
    const first = await client.createTag({ parent: repo, tag: { name: "one", digest: digest("e") } });
    server.clock.advance(2000);
    const cut = timestampFromDate(new Date(server.clock.now()));
    const second = await client.createTag({ parent: repo, tag: { name: "two", digest: digest("e") } });
    const both = await client.listTags({ uidp: { childrenOf: repo }, digest: digest("e"), orderBy: "name" });
    expect(both.tags.map((t) => t.uid)).toEqual([first.uid, second.uid]);
    expect(both.totalCount).toBe(2n);
    const recent = await client.listTags({ uidp: { childrenOf: repo }, updatedSince: cut });
    expect(recent.tags.map((t) => t.name)).toEqual(["two"]);

    const err = await connectFailure(client.createTag({ parent: repo, tag: { name: "three", digest: digest("E") } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.findDetails(BadRequestSchema)[0]?.fieldViolations[0]).toMatchObject({ field: "digest", description: DIGEST_RULE });
    expect(err.findDetails(ErrorInfoSchema)[0]).toMatchObject({ domain: "registry.localhost" });
  });
});
