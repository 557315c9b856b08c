import grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { IdentitiesService } from "../../gen/platform/iam/v2beta1/identities_pb.js";
import { connectClient, grpcStatusDetails, type JsonObject, type RestClient } from "../support/clients.js";
import { grpcSuite } from "../support/grpc-suite.js";
import {
  TIMESTAMP,
  bootstrapIdentityUid,
  createGroup,
  createIdentity,
  expectHeldUntilDeleted,
  expectInvalid,
  ok,
  restDetail,
  uidOf,
} from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServerAsAdmin } from "../support/shared-server.js";

const GITHUB = "https://token.actions.githubusercontent.com";
/** What an issuer pattern that leaves the scheme, host or port open is told (docs/security.md, "What the exchange checks"). */
const ISSUER_PATTERN_OPEN =
  "must fix the scheme, host and port: start with them as literal text, then / or nothing more (e.g. https://token\\.actions\\.githubusercontent\\.com/.*)";

let server: TestServer;
let call: RestClient;
beforeAll(async () => ({ server, call } = await sharedServerAsAdmin()));

const names = (body: JsonObject) => (body["identities"] as JsonObject[]).map((i) => i["name"]);

describe("identities over REST", () => {
  it("creates an identity in a group with the spec's shape", async () => {
    const org = await createGroup(call, "identity-shape");
    const res = await call("POST", `/iam/v2beta1/identities/${uidOf(org)}`, {
      name: "ci",
      description: "the CI robot",
      claimMatch: { issuer: GITHUB, subject: "repo:acme/app:ref:refs/heads/main" },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const identity = res.body;
    expect(uidOf(identity)).toMatch(new RegExp(`^${uidOf(org)}/[0-9a-f]{16}$`));
    expect(identity).toEqual({
      uid: uidOf(identity),
      name: "ci",
      description: "the CI robot",
      lastSeenTime: identity["createTime"],
      // Only the members in use: each pair is a oneof (docs/design.md, "Claim match").
      claimMatch: { issuer: GITHUB, subject: "repo:acme/app:ref:refs/heads/main" },
      createTime: identity["createTime"],
      updateTime: identity["createTime"],
    });
    expect(identity["lastSeenTime"]).toMatch(TIMESTAMP);
    expect(await ok(call("GET", `/iam/v2beta1/identities/${uidOf(identity)}`))).toEqual(identity);
  });

  it("stores claim patterns as given and ignores output-only fields on create", async () => {
    const org = await createGroup(call, "identity-patterns");
    const identity = await createIdentity(call, uidOf(org), {
      name: "any branch",
      claimMatch: {
        issuerPattern: "https://token\\.actions\\.githubusercontent\\.com",
        subjectPattern: "repo:acme/.*",
        audience: "sts.example",
      },
      lastSeenTime: "2001-01-01T00:00:00Z",
      uid: "chosen",
    });
    expect(identity["claimMatch"]).toEqual({
      issuerPattern: "https://token\\.actions\\.githubusercontent\\.com",
      subjectPattern: "repo:acme/.*",
      audience: "sts.example",
    });
    expect(identity["lastSeenTime"]).not.toBe("2001-01-01T00:00:00.000Z");
    expect(identity["lastSeenTime"]).toMatch(TIMESTAMP);
    expect(uidOf(identity)).toMatch(new RegExp(`^${uidOf(org)}/[0-9a-f]{16}$`));
  });

  it.each([
    ["no name", {}, "name", "is required"],
    ["an empty name", { name: "" }, "name", "is required"],
    ["a long name", { name: "x".repeat(201) }, "name", "must be at most 200 characters"],
    ["a long description", { name: "n", description: "x".repeat(4097) }, "description", "must be at most 4096 characters"],
    [
      "a subject pattern that does not compile",
      { name: "n", claimMatch: { subjectPattern: "repo:(acme" } },
      "claim_match.subject_pattern",
      undefined,
    ],
    [
      "an issuer pattern that does not compile",
      { name: "n", claimMatch: { issuerPattern: "[z-a]" } },
      "claim_match.issuer_pattern",
      undefined,
    ],
    [
      "an issuer pattern open to any host",
      { name: "n", claimMatch: { issuerPattern: "https://.*" } },
      "claim_match.issuer_pattern",
      ISSUER_PATTERN_OPEN,
    ],
    [
      "an issuer pattern whose host varies",
      { name: "n", claimMatch: { issuerPattern: "https://[a-z]+\\.example\\.com/.*" } },
      "claim_match.issuer_pattern",
      ISSUER_PATTERN_OPEN,
    ],
    [
      "an issuer pattern whose host could go on",
      { name: "n", claimMatch: { issuerPattern: "https://idp\\.example\\.com.*" } },
      "claim_match.issuer_pattern",
      ISSUER_PATTERN_OPEN,
    ],
    [
      "a pattern that would escape the anchors",
      { name: "n", claimMatch: { subjectPattern: "a)|(b" } },
      "claim_match.subject_pattern",
      undefined,
    ],
    [
      "a long pattern",
      { name: "n", claimMatch: { subjectPattern: "a".repeat(513) } },
      "claim_match.subject_pattern",
      "must be at most 512 characters",
    ],
    ["a long issuer", { name: "n", claimMatch: { issuer: "a".repeat(1025) } }, "claim_match.issuer", "must be at most 1024 characters"],
    // issuer and subject share an index entry: bytes count, not characters.
    [
      "an issuer over 1024 bytes",
      { name: "n", claimMatch: { issuer: "é".repeat(513) } },
      "claim_match.issuer",
      "must be at most 1024 bytes in UTF-8",
    ],
    [
      "an audience pattern that does not compile",
      { name: "n", claimMatch: { audiencePattern: "(" } },
      "claim_match.audience_pattern",
      undefined,
    ],
    ["a backreference (not in RE2)", { name: "n", claimMatch: { subjectPattern: "(a)\\1" } }, "claim_match.subject_pattern", undefined],
  ])("refuses %s", async (_label, body, field, description) => {
    const org = await createGroup(call, `bad-${field}-${Math.random().toString(16).slice(2, 8)}`);
    const got = expectInvalid(await call("POST", `/iam/v2beta1/identities/${uidOf(org)}`, body), field);
    if (description) expect(got).toBe(description);
    else expect(got).toMatch(/^is not a valid RE2 regular expression: /);
    expect((await ok(call("GET", `/iam/v2beta1/identities?uidp.children_of=${uidOf(org)}`)))["totalCount"]).toBe("0");
  });

  it("refuses a missing group with NOT_FOUND", async () => {
    const res = await call("POST", `/iam/v2beta1/identities/${"e".repeat(40)}`, { name: "orphan" });
    expect(res.status).toBe(404);
    expect(restDetail(res, "ResourceInfo")).toMatchObject({ resourceType: "group", resourceName: "e".repeat(40) });
    expect((await call("GET", `/iam/v2beta1/identities/${"e".repeat(40)}/0000000000000000`)).status).toBe(404);
  });

  it("updates the fields in the body, or exactly those in the mask", async () => {
    const org = await createGroup(call, "identity-update");
    const identity = await createIdentity(call, uidOf(org), {
      name: "svc",
      description: "d",
      claimMatch: { issuer: GITHUB, subject: "a" },
    });
    const path = `/iam/v2beta1/identities/${uidOf(identity)}`;
    server.clock.advance(5000);

    const described = await ok(call("PATCH", path, { description: "" }));
    expect(described).toMatchObject({ name: "svc", description: "", claimMatch: { issuer: GITHUB, subject: "a" } });
    expect(described["updateTime"]).not.toBe(identity["updateTime"]);
    expect(described["createTime"]).toBe(identity["createTime"]);
    // lastSeenTime is not touched by an update.
    expect(described["lastSeenTime"]).toBe(identity["lastSeenTime"]);

    // A nested field in the body changes only that leaf.
    const subject = await ok(call("PATCH", path, { claimMatch: { subject: "b" } }));
    expect(subject["claimMatch"]).toMatchObject({ issuer: GITHUB, subject: "b" });

    const masked = await ok(
      call("PATCH", `${path}?updateMask=claim_match.subject_pattern`, { name: "ignored", claimMatch: { subjectPattern: "b-.*" } }),
    );
    // The pattern takes the place of the exact subject: they are one oneof.
    expect(masked).toMatchObject({ name: "svc", claimMatch: { issuer: GITHUB, subjectPattern: "b-.*" } });
    expect(masked["claimMatch"]).toEqual({ issuer: GITHUB, subjectPattern: "b-.*" });

    expectInvalid(await call("PATCH", `${path}?updateMask=last_seen_time`, {}), "update_mask");
    expectInvalid(await call("PATCH", path, { name: "" }), "name");
    expectInvalid(await call("PATCH", path, { claimMatch: { issuerPattern: "(" } }), "claim_match.issuer_pattern");
    expect(expectInvalid(await call("PATCH", path, { claimMatch: { issuerPattern: "https://.*" } }), "claim_match.issuer_pattern")).toBe(
      ISSUER_PATTERN_OPEN,
    );
    expect(await ok(call("GET", path))).toEqual(masked);
    expect((await call("PATCH", `/iam/v2beta1/identities/${uidOf(org)}/0000000000000000`, { name: "x" })).status).toBe(404);
  });

  it("lists with scopes, the name filter, the claim filters, order and pages", async () => {
    const org = await createGroup(call, "identity-list");
    const team = await createGroup(call, "team", uidOf(org));
    await createIdentity(call, uidOf(org), { name: "b", claimMatch: { issuer: GITHUB, subject: "repo:acme/one" } });
    await createIdentity(call, uidOf(org), { name: "a", claimMatch: { issuer: GITHUB, subject: "repo:acme/two" } });
    await createIdentity(call, uidOf(team), { name: "c", claimMatch: { issuer: "https://gitlab.example", subject: "repo:acme/one" } });
    const list = (q: string) => ok(call("GET", `/iam/v2beta1/identities?${q}`));

    expect(names(await list(`uidp.children_of=${uidOf(org)}&order_by=name`))).toEqual(["a", "b"]);
    expect(names(await list(`uidp.descendants_of=${uidOf(org)}&order_by=name%20desc`))).toEqual(["c", "b", "a"]);
    expect(names(await list(`uidp.in_root=${uidOf(org)}&name=c`))).toEqual(["c"]);
    expect(names(await list(`uidp.in_root=${uidOf(org)}&name=C`))).toEqual([]);
    expect(names(await list(`uidp.in_root=${uidOf(org)}&claim_match.issuer=${encodeURIComponent(GITHUB)}&order_by=name`))).toEqual([
      "a",
      "b",
    ]);
    expect(names(await list(`uidp.in_root=${uidOf(org)}&claimMatch.subject=repo:acme/one&order_by=name`))).toEqual(["b", "c"]);
    expect(
      names(await list(`claim_match.issuer=${encodeURIComponent(GITHUB)}&claim_match.subject=repo:acme/one&uidp.in_root=${uidOf(org)}`)),
    ).toEqual(["b"]);
    expectInvalid(await call("GET", "/iam/v2beta1/identities?claim_match.audience=x"), "claim_match.audience");

    const first = await list(`uidp.in_root=${uidOf(org)}&order_by=name&page_size=2`);
    expect(names(first)).toEqual(["a", "b"]);
    expect(first["totalCount"]).toBe("3");
    const next = await list(
      `uidp.in_root=${uidOf(org)}&order_by=name&page_size=2&page_token=${encodeURIComponent(first["nextPageToken"] as string)}`,
    );
    expect(names(next)).toEqual(["c"]);
    expect(next["nextPageToken"]).toBe("");
    // A token is bound to its filters, the claim filters included.
    const swapped = await call(
      "GET",
      `/iam/v2beta1/identities?uidp.in_root=${uidOf(org)}&order_by=name&page_size=2&claim_match.subject=x&page_token=${encodeURIComponent(first["nextPageToken"] as string)}`,
    );
    expectInvalid(swapped, "page_token");
  });

  it("lists the bootstrap identity, which belongs to no group", async () => {
    const all = await ok(call("GET", "/iam/v2beta1/identities?name=bootstrap"));
    const [boot] = all["identities"] as JsonObject[];
    const sub = bootstrapIdentityUid(server.token);
    expect(boot).toMatchObject({ uid: sub, name: "bootstrap" });
    expect(boot!["lastSeenTime"]).toMatch(TIMESTAMP);
  });

  it("deletes an identity; a group holding one is not empty", async () => {
    const org = await createGroup(call, "identity-delete");
    const identity = await createIdentity(call, uidOf(org), { name: "gone" });
    await expectHeldUntilDeleted(call, uidOf(org), `/iam/v2beta1/identities/${uidOf(identity)}`, "identities");
  });
});

describe("identities over gRPC (@grpc/grpc-js)", () => {
  interface IdentityMsg {
    uid: string;
    name: string;
    description: string;
    // Each pair is a oneof: only the member in use is present, and the loader names it.
    claim_match: Record<string, string> | null;
    last_seen_time: { seconds: string; nanos: number } | null;
  }
  const { rpc, failure } = grpcSuite(() => server, "platform.iam.v2beta1.IdentitiesService", "platform/iam/v2beta1/identities.proto");

  it("creates, gets, lists, updates and deletes", async () => {
    const org = await createGroup(call, "grpc-identities");
    const created = await rpc<IdentityMsg>("CreateIdentity", {
      parent: uidOf(org),
      identity: { name: "robot", claim_match: { issuer: GITHUB, subject_pattern: "repo:acme/.*" } },
    });
    expect(created.uid.startsWith(`${uidOf(org)}/`)).toBe(true);
    expect(created.claim_match).toEqual({ issuer: GITHUB, iss: "issuer", subject_pattern: "repo:acme/.*", sub: "subject_pattern" });
    expect(created.last_seen_time?.seconds).toMatch(/^\d+$/);
    expect(await rpc<IdentityMsg>("GetIdentity", { uid: created.uid })).toEqual(created);

    const list = await rpc<{ identities: IdentityMsg[]; total_count: string }>("ListIdentities", { uidp: { children_of: uidOf(org) } });
    expect(list.identities.map((i) => i.uid)).toEqual([created.uid]);
    expect(list.total_count).toBe("1");
    const byIssuer = await rpc<{ identities: IdentityMsg[] }>("ListIdentities", {
      uidp: { children_of: uidOf(org) },
      claim_match: { issuer: "https://other" },
    });
    expect(byIssuer.identities).toEqual([]);

    const updated = await rpc<IdentityMsg>("UpdateIdentity", {
      identity: { uid: created.uid, description: "new" },
      update_mask: { paths: ["description"] },
    });
    expect(updated).toMatchObject({ name: "robot", description: "new" });

    await rpc("DeleteIdentity", { uid: created.uid });
    expect((await failure(rpc("GetIdentity", { uid: created.uid }))).code).toBe(grpc.status.NOT_FOUND);
  });

  it("refuses a bad pattern and a missing parent with typed details", async () => {
    const org = await createGroup(call, "grpc-identity-errors");
    const err = await failure(
      rpc("CreateIdentity", { parent: uidOf(org), identity: { name: "x", claim_match: { subject_pattern: "(" } } }),
    );
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcStatusDetails(err).details.find((d) => d.type === "google.rpc.BadRequest")?.value).toMatchObject({
      fieldViolations: [{ field: "claim_match.subject_pattern" }],
    });
    const noParent = await failure(rpc("CreateIdentity", { identity: { name: "x" } }));
    expect(noParent.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(grpcStatusDetails(noParent).message).toBe("Invalid argument: parent: is required");
  });
});

describe("identities over Connect", () => {
  it("creates and lists, with typed errors", async () => {
    const org = await createGroup(call, "connect-identities");
    const client = connectClient(IdentitiesService, server.url, server.token);
    const identity = await client.createIdentity({
      parent: uidOf(org),
      identity: { name: "svc", claimMatch: { iss: { case: "issuer", value: GITHUB }, sub: { case: "subject", value: "s" } } },
    });
    expect(identity.lastSeenTime).toBeDefined();
    expect(identity.claimMatch).toMatchObject({
      iss: { case: "issuer", value: GITHUB },
      sub: { case: "subject", value: "s" },
      aud: { case: undefined },
    });
    const list = await client.listIdentities({ uidp: { childrenOf: uidOf(org) }, claimMatch: { sub: { case: "subject", value: "s" } } });
    expect(list.identities.map((i) => i.uid)).toEqual([identity.uid]);
    expect(list.totalCount).toBe(1n);
    const err = await client.createIdentity({ parent: uidOf(org), identity: { name: "" } }).catch((e: unknown) => ConnectError.from(e));
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
    expect((err as ConnectError).findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field).toBe("name");
  });
});
