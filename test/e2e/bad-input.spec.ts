import http from "node:http";
import net from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../gen/platform/iam/v2beta1/identities_pb.js";
import { RolesService } from "../../gen/platform/iam/v2beta1/roles_pb.js";
import { connectClient, restClient, type JsonObject, type Protocol, type RestClient } from "../support/clients.js";
import { createGroup, createIdentity, restDetail, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// Text PostgreSQL cannot store (NUL) or UTF-8 cannot encode (unpaired
// surrogates), and uids of the wrong shape, are INVALID_ARGUMENT naming the
// field on every protocol — never a 500 — and never reach a query.

let server: TestServer;
let call: RestClient;
let org: string;

beforeAll(async () => {
  server = await sharedServer();
  call = restClient(server.url, server.token);
  org = uidOf(await createGroup(call, "bad-input"));
});

function expectBadRequest(res: { status: number; body: JsonObject }, field: string, label: string): void {
  expect(res.status, `${label}: ${JSON.stringify(res.body)}`).toBe(400);
  expect(res.body["code"], label).toBe(3);
  const violations = (restDetail({ ...res, headers: new Headers() }, "BadRequest")?.["fieldViolations"] ?? []) as JsonObject[];
  expect(violations[0]?.["field"], label).toBe(field);
}

describe("NUL and odd uids over REST", () => {
  it("answers each probe of the report with 400 and a BadRequest naming the field", async () => {
    const probes: [string, string, unknown, string][] = [
      ["GET", `/iam/v2beta1/groups/${org}%00`, undefined, "uid"],
      ["GET", "/iam/v2beta1/groups?name=a%00", undefined, "name"],
      ["GET", "/iam/v2beta1/groups?uidp.descendants_of=%00", undefined, "uidp.descendants_of"],
      ["GET", "/iam/v2beta1/roles/%00", undefined, "uid"],
      ["POST", `/iam/v2beta1/groups/${org}`, { name: "n", description: "a\u0000b" }, "description"],
      ["PATCH", `/iam/v2beta1/groups/${org}`, { description: "a\u0000b" }, "description"],
      // The REST binder refuses it first, naming the request field.
      ["POST", `/iam/v2beta1/groups/${org}`, { name: "n", description: "a\ud800b" }, "group.description"],
      ["POST", `/iam/v2beta1/identities/${org}`, { name: "n", claimMatch: { subject: "x\u0000" } }, "claim_match.subject"],
      ["GET", `/iam/v2beta1/groups/${org.toUpperCase()}`, undefined, "uid"],
      ["GET", `/iam/v2beta1/groups/${org}/123`, undefined, "uid"],
      ["GET", `/iam/v2beta1/groups/${"a".repeat(5000)}`, undefined, "uid"],
      ["GET", "/iam/v2beta1/roleBindings?identity=%00", undefined, "identity"],
      ["POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: "x\u0000", roleUid: "viewer" }, "identity_uid"],
      ["GET", "/vulnerabilities/v2beta1/advisories/a%00", undefined, "uid"],
      ["GET", "/iam/v1/groups?id=%00", undefined, "id"],
    ];
    for (const [method, path, body, field] of probes) expectBadRequest(await call(method, path, body), field, `${method} ${path}`);
    // An empty segment matches no route at all.
    expect((await call("GET", `/iam/v2beta1/identities/${org}//0123456789abcdef`)).status).toBe(404);
    const exchange = await fetch(`${server.url}/sts/exchange?aud=${encodeURIComponent(server.app.urls.baseUrl)}&identity=%00`);
    expectBadRequest({ status: exchange.status, body: (await exchange.json()) as JsonObject }, "identity", "sts");
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("answers an RPC that names no host (HTTP/1.0 without Host) like any other, and keeps serving", async () => {
    const body = JSON.stringify({ uid: org });
    const request =
      `POST /platform.iam.v2beta1.GroupsService/GetGroup HTTP/1.0\r\nContent-Type: application/json\r\n` +
      `Authorization: Bearer ${server.token}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const answer = await new Promise<string>((resolve, reject) => {
      // Written, not ended: a client that half-closes may see its answer dropped; HTTP/1.0 ends with the answer.
      const socket = net.connect(Number(new URL(server.url).port), "127.0.0.1", () => socket.write(request));
      let text = "";
      socket
        .setEncoding("utf8")
        .on("data", (c: string) => (text += c))
        .on("end", () => resolve(text))
        .on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.[01] 200 /);
    expect(answer).toContain(`"uid":"${org}"`);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("keeps a multi-byte value within the index limits: a claim of 1024 four-byte characters is refused, not a 500", async () => {
    const res = await call("POST", `/iam/v2beta1/identities/${org}`, {
      name: "n",
      claimMatch: { issuer: "😀".repeat(1024), subject: "😀".repeat(1024) },
    });
    expectBadRequest(res, "claim_match.issuer", "emoji claim");
  });
});

describe.each<Protocol>(["grpc", "connect", "grpc-web"])("NUL and odd uids over %s", (protocol) => {
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );

  it("refuses them with INVALID_ARGUMENT naming the field", async () => {
    const groups = connectClient(GroupsService, server.url, server.token, protocol);
    const roles = connectClient(RolesService, server.url, server.token, protocol);
    // Each call starts only when its turn comes (a rejection nobody awaits yet is unhandled).
    const cases: [string, () => Promise<unknown>, string][] = [
      ["get NUL", () => groups.getGroup({ uid: `${org}\u0000` }), "uid"],
      ["list name NUL", () => groups.listGroups({ name: "a\u0000" }), "name"],
      ["list scope NUL", () => groups.listGroups({ uidp: { descendantsOf: "\u0000" } }), "uidp.descendants_of"],
      ["update NUL", () => groups.updateGroup({ group: { uid: org, description: "a\u0000b" } }), "description"],
      ["role NUL", () => roles.getRole({ uid: "\u0000" }), "uid"],
      ["role odd", () => roles.getRole({ uid: "../owner" }), "uid"],
    ];
    for (const [label, call, field] of cases) {
      const err = await failure(call());
      expect(err?.code, label).toBe(Code.InvalidArgument);
      expect(err?.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, label).toBe(field);
    }
  });
});

describe("encoded slashes (%2F) in REST paths", () => {
  it("refuses a %2F outside a ** capture with 400, naming the one-segment field or the path", async () => {
    const probes: [string, string, string][] = [
      // The plain path has a route (GET a group, list groups), but the %2F stands for a fixed segment's slash.
      ["GET", `/iam/v2beta1/groups%2F${org}`, "path"],
      ["GET", "/iam%2Fv2beta1/groups", "path"],
      ["GET", "/iam/v2beta1%2Fgroups", "path"],
      ["POST", `/iam/v2beta1/roleBindings%2F${org}:batchCreate`, "path"],
      ["DELETE", `/iam/v1/groups%2F${org}`, "path"],
      // {uid} of a root role binding is one segment.
      ["GET", "/iam/v2beta1/rootRoleBindings/a%2Fb", "uid"],
      ["DELETE", "/iam/v2beta1/rootRoleBindings/a%2fb", "uid"],
    ];
    for (const [method, path, field] of probes) expectBadRequest(await call(method, path), field, `${method} ${path}`);
  });

  it("routes a %2F path as its plain form would be: same answer for x%2Fgroups and x/groups", async () => {
    const pairs: [string, string][] = [
      [`/iam/v2beta1/groups/x%2Fgroups`, `/iam/v2beta1/groups/x/groups`],
      [`/iam/v2beta1/groups/${org}%2Fgroups`, `/iam/v2beta1/groups/${org}/groups`],
      [`/iam/v2beta1/roleBindings/${org}%2Fx:batchCreate`, `/iam/v2beta1/roleBindings/${org}/x:batchCreate`],
    ];
    for (const [encoded, plain] of pairs) {
      const method = encoded.endsWith(":batchCreate") ? "POST" : "GET";
      const a = await call(method, encoded, method === "POST" ? { requests: [] } : undefined);
      const b = await call(method, plain, method === "POST" ? { requests: [] } : undefined);
      expect([a.status, a.body["code"]], encoded).toEqual([b.status, b.body["code"]]);
      expect(a.status, encoded).toBe(400);
      expect(a.body["message"], encoded).toBe(b.body["message"]);
    }
  });

  it("keeps every other decoding rule inside a ** capture: NUL, bad escapes, %25, .., empty pieces, huge", async () => {
    const probes: [string, string][] = [
      [`/iam/v2beta1/groups/${org}%2F%00`, "uid"],
      [`/iam/v2beta1/groups/${org}%2F%zz`, "uid"],
      [`/iam/v2beta1/groups/${org}%2F%C3`, "uid"],
      [`/iam/v2beta1/groups/${org}%252F0123456789abcdef`, "uid"],
      [`/iam/v2beta1/groups/${org}%2F..%2F0123456789abcdef`, "uid"],
      [`/iam/v2beta1/groups/${org}%2F%2E%2E`, "uid"],
      [`/iam/v2beta1/groups/${org}${"%2F0123456789abcdef".repeat(400)}`, "uid"],
      [`/iam/v1/groups/${org}%2F%00`, "id"],
    ];
    for (const [path, field] of probes) {
      // v1 has no GET of one group.
      const res = await rawRequest(path.startsWith("/iam/v1/") ? "DELETE" : "GET", path);
      expectBadRequest(res, field, path);
    }
    // Empty pieces are empty segments, as `//` is: no route.
    for (const path of [`/iam/v2beta1/groups/${org}%2F%2F0123456789abcdef`, `/iam/v2beta1/groups/${org}%2F`, "/iam/v2beta1/groups/%2F"]) {
      expect((await rawRequest("GET", path)).status, path).toBe(404);
    }
    // Past Node's header limit a path is refused before any route sees it.
    expect((await rawRequest("GET", `/iam/v2beta1/groups/${org}${"%2Fa".repeat(6000)}`)).status).toBe(431);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});

/** A GET with the path sent exactly as written (fetch and undici would normalise `..` or refuse odd escapes). */
function rawRequest(method: string, path: string): Promise<{ status: number; body: JsonObject }> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path, headers: { authorization: `Bearer ${server.token}` } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text.startsWith("{") ? (JSON.parse(text) as JsonObject) : {} }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("uids deeper or longer than any the service makes", () => {
  // The report's request: 40 hex and 4,000 (68 KB) or 30,000 (510 KB) segments. Each prefix
  // used to become a query parameter, so the first took 13 s and the second ran the process
  // out of memory. Refused on its length before anything else (docs/security.md, "Input").
  const deep = (segments: number) => `${org}${"/0123456789abcdef".repeat(segments)}`;
  const LIMIT_MS = 2000;

  async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
    const start = performance.now();
    const out = await f();
    return [out, performance.now() - start];
  }

  it("answers a deep uidp.ancestors_of over Connect JSON with INVALID_ARGUMENT within 2 s", async () => {
    for (const segments of [4000, 30_000]) {
      const [res, ms] = await timed(() =>
        fetch(`${server.url}/platform.iam.v2beta1.GroupsService/ListGroups`, {
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${server.token}` },
          body: JSON.stringify({ uidp: { ancestorsOf: deep(segments) } }),
        }),
      );
      const body = (await res.json()) as JsonObject;
      expect(res.status, JSON.stringify(body).slice(0, 500)).toBe(400);
      expect(body["code"]).toBe("invalid_argument");
      expect(String(body["message"])).toMatch(/^Invalid argument: uidp\.ancestors_of: is longer than any uid/);
      expect(ms, `${segments} segments`).toBeLessThan(LIMIT_MS);
    }
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("answers every uidp scope and v1 id that is too deep over REST with INVALID_ARGUMENT within 2 s", async () => {
    // A query string of 13.6 KB: longer ones are 431 (the server's 16 KB header limit) before any of this.
    for (const param of ["uidp.ancestors_of", "uidp.descendants_of", "uidp.children_of", "uidp.in_root", "uidp.ids"]) {
      const [res, ms] = await timed(() => call("GET", `/iam/v2beta1/groups?${param}=${deep(800)}`));
      expectBadRequest(res, param === "uidp.ids" ? "uidp.ids[0]" : param, param);
      expect(ms, param).toBeLessThan(LIMIT_MS);
    }
    // Within the length of a uid, but deeper than any group.
    expectBadRequest(await call("GET", `/iam/v2beta1/groups?uidp.ancestors_of=${deep(16)}`), "uidp.ancestors_of", "17 segments");
    expectBadRequest(await call("GET", `/iam/v1/groups?id=${deep(800)}`), "id", "v1 id");
    expectBadRequest(await call("GET", `/iam/v1/identities?uidp.descendants_of=${deep(800)}`), "uidp.descendants_of", "v1 scope");
    // In a body, where no header limit applies.
    const [res, ms] = await timed(() => call("POST", `/iam/v2beta1/roleBindings/${org}`, { identityUid: deep(4000), roleUid: "viewer" }));
    expectBadRequest(res, "identity_uid", "binding body");
    expect(ms, "binding body").toBeLessThan(LIMIT_MS);
  });

  it("answers over gRPC and gRPC-Web too", async () => {
    for (const protocol of ["grpc", "grpc-web"] as const) {
      const groups = connectClient(GroupsService, server.url, server.token, protocol);
      const err = await groups.listGroups({ uidp: { ancestorsOf: deep(4000) } }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, protocol).toBe(Code.InvalidArgument);
      expect(err?.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, protocol).toBe("uidp.ancestors_of");
    }
  });

  it("lets groups nest 16 deep and refuses a group in the deepest one, naming parent", async () => {
    let parent = org;
    for (let depth = 2; depth <= 16; depth++) parent = uidOf(await createGroup(call, `level-${depth}`, parent));
    expect(parent.split("/")).toHaveLength(16);
    const res = await call("POST", `/iam/v2beta1/groups/${parent}`, { name: "too-deep" });
    expectBadRequest(res, "parent", "17th level");
    expect(String(res.body["message"])).toContain("16 groups deep");
    // What the deepest group holds is still fine: an identity one segment below it.
    const identity = uidOf(
      await createIdentity(call, parent, { name: "deep", claimMatch: { issuer: "https://issuer.invalid", subject: "s" } }),
    );
    expect((await call("GET", `/iam/v2beta1/identities/${identity}`)).status).toBe(200);
    expect((await call("GET", `/iam/v2beta1/groups?uidp.ancestors_of=${parent}`)).body["totalCount"]).toBe("15");
  });
});

describe("page tokens belong to the list they came from", () => {
  it("refuses a ListGroups token in ListIdentities, ListRoles and ListRepos, and in ListGroups with another scope (REST)", async () => {
    await createGroup(call, "second", org);
    const first = await call("GET", `/iam/v2beta1/groups?page_size=1`);
    const token = first.body["nextPageToken"] as string;
    expect(token).toBeTruthy();
    expect((await call("GET", `/iam/v2beta1/groups?page_size=1&page_token=${token}`)).status).toBe(200);
    for (const path of [
      "/iam/v2beta1/identities",
      "/iam/v2beta1/roles",
      "/registry/v2beta1/repos",
      `/iam/v2beta1/groups?uidp.descendants_of=${org}&`,
    ]) {
      const sep = path.endsWith("&") ? "" : "?";
      const res = await call("GET", `${path}${sep}page_size=1&page_token=${token}`);
      expectBadRequest(res, "page_token", path);
    }
  });

  it("refuses a ListGroups token in ListRoles and ListIdentities over Connect", async () => {
    await createGroup(call, "third", org);
    const groups = connectClient(GroupsService, server.url, server.token, "connect");
    const roles = connectClient(RolesService, server.url, server.token, "connect");
    const identities = connectClient(IdentitiesService, server.url, server.token, "connect");
    const { nextPageToken } = await groups.listGroups({ pageSize: 1 });
    expect(nextPageToken).not.toBe("");
    for (const [label, other] of [
      ["roles", () => roles.listRoles({ pageSize: 1, pageToken: nextPageToken })],
      ["identities", () => identities.listIdentities({ pageSize: 1, pageToken: nextPageToken })],
    ] as const) {
      const err = await other().then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code, label).toBe(Code.InvalidArgument);
      expect(err?.findDetails(BadRequestSchema)[0]?.fieldViolations[0]?.field, label).toBe("page_token");
    }
  });
});

describe("names and descriptions", () => {
  const issuer = { issuer: "https://issuer.invalid", subject: "s" };
  // [label, path, body, field]
  const refused = (): [string, string, JsonObject, string][] => [
    ["identity name with a control character", `/iam/v2beta1/identities/${org}`, { name: "a\u0001b", claimMatch: issuer }, "name"],
    ["identity name with a line feed", `/iam/v2beta1/identities/${org}`, { name: "a\nb", claimMatch: issuer }, "name"],
    [
      "identity description with a C1 control",
      `/iam/v2beta1/identities/${org}`,
      { name: "n", description: "a\u0085b", claimMatch: issuer },
      "description",
    ],
    [
      "identity description with ESC",
      `/iam/v2beta1/identities/${org}`,
      { name: "n", description: "\u001b[31mred", claimMatch: issuer },
      "description",
    ],
    ["role name with DEL", `/iam/v2beta1/roles/${org}`, { name: "r\u007f", capabilities: ["repo.list"] }, "name"],
    ["repo description with a bell", `/registry/v2beta1/repos/${org}`, { name: "ctl", description: "\u0007" }, "description"],
    ["group description with a backspace", `/iam/v2beta1/groups/${org}`, { name: "ctl", description: "a\bb" }, "description"],
    // 200 characters, but 600 bytes.
    ["identity name over 512 bytes", `/iam/v2beta1/identities/${org}`, { name: "€".repeat(200), claimMatch: issuer }, "name"],
    // 3,000 characters, but 9,000 bytes.
    [
      "role description over 8192 bytes",
      `/iam/v2beta1/roles/${org}`,
      { name: "r", description: "€".repeat(3000), capabilities: ["repo.list"] },
      "description",
    ],
    ["repo description over 8192 bytes", `/registry/v2beta1/repos/${org}`, { name: "big", description: "€".repeat(3000) }, "description"],
  ];

  it("refuses control characters and values over their byte caps with INVALID_ARGUMENT naming the field", async () => {
    for (const [label, path, body, field] of refused()) {
      const res = await call("POST", path, body);
      expectBadRequest(res, field, label);
      expect(String(res.body["message"]), label).toMatch(/control characters|bytes in UTF-8/);
    }
  });

  it("refuses them on update as well", async () => {
    const identity = uidOf(await createIdentity(call, org, { name: "to-update", claimMatch: issuer }));
    expectBadRequest(await call("PATCH", `/iam/v2beta1/identities/${identity}`, { description: "x\u0002y" }), "description", "patch");
    expectBadRequest(await call("PATCH", `/iam/v2beta1/identities/${identity}`, { name: "€".repeat(171) }), "name", "patch name bytes");
  });

  it("keeps line breaks and tabs in a description, and a description of exactly 8192 bytes", async () => {
    const identity = await createIdentity(call, org, {
      name: "multi-line",
      description: "first line\n\tindented\r\nlast",
      claimMatch: issuer,
    });
    expect(identity["description"]).toBe("first line\n\tindented\r\nlast");
    const full = "é".repeat(4096);
    expect(Buffer.byteLength(full)).toBe(8192);
    expect((await call("POST", `/iam/v2beta1/roles/${org}`, { name: "full", description: full, capabilities: ["repo.list"] })).status).toBe(
      200,
    );
  });
});

describe("repeated and map fields", () => {
  it("refuses more than 1,000 entries in any repeated field, naming it, before its entries are looked at", async () => {
    const probes: [string, string, unknown, string][] = [
      // No cap of their own: 1,001 copies of a known capability, 1,001 resource limits.
      ["POST", `/iam/v2beta1/roles/${org}`, { name: "many", capabilities: Array(1001).fill("repo.list") }, "capabilities"],
      [
        "POST",
        `/iam/v2beta1/groups/${org}`,
        { name: "many", resourceLimits: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, 1])) },
        "resource_limits",
      ],
      // 1,001 uids that are each valid: refused on the count, not 1,001 checks and a query.
      ["POST", `/platform.iam.v2beta1.GroupsService/ListGroups`, { uidp: { ids: Array(1001).fill(org) } }, "uidp.ids"],
      [
        "POST",
        `/iam/v2beta1/roleBindings/${org}:batchCreate`,
        { requests: Array(1001).fill({ identityUid: org, roleUid: "viewer" }) },
        "requests",
      ],
    ];
    for (const [method, path, body, field] of probes) {
      const res = path.startsWith("/platform.")
        ? await fetch(`${server.url}${path}`, {
            method,
            headers: { "content-type": "application/json", authorization: `Bearer ${server.token}` },
            body: JSON.stringify(body),
          }).then(async (r) => ({ status: r.status, body: (await r.json()) as JsonObject }))
        : await call(method, path, body);
      if (path.startsWith("/platform.")) {
        expect(res.status, field).toBe(400);
        expect(String(res.body["message"]), field).toBe(`Invalid argument: ${field}: must have at most 1000 entries`);
      } else {
        expectBadRequest(res, field, field);
        expect(String(res.body["message"]), field).toBe(`Invalid argument: ${field}: must have at most 1000 entries`);
      }
    }
    // Inside JSON (a google.protobuf.Struct: an advisory document), a list or an object is capped the same.
    const doc = { id: "CVE-2001-0002", modified: "2024-01-01T00:00:00Z" };
    for (const [document, field] of [
      [{ ...doc, affected: Array(1001).fill({}) }, "documents[0].affected"],
      [
        { ...doc, database_specific: Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i])) },
        "documents[0].database_specific",
      ],
    ] as const) {
      const res = await call("POST", "/vulnerabilities/v2beta1/advisories:import", { documents: [document] });
      expect(res.status, field).toBe(400);
      expect(String(res.body["message"]), field).toBe(`Invalid argument: ${field}: must have at most 1000 entries`);
    }
    // A map key longer than any the service uses.
    expectBadRequest(
      await call("POST", `/iam/v2beta1/groups/${org}`, { name: "key", resourceLimits: { ["k".repeat(257)]: 1 } }),
      "resource_limits",
      "long key",
    );
    // The services' own, lower caps still apply below it.
    expectBadRequest(
      await call("POST", `/iam/v2beta1/roleBindings/${org}:batchCreate`, {
        requests: Array(201).fill({ identityUid: `${org}/0123456789abcdef`, roleUid: "viewer" }),
      }),
      "requests",
      "batch of 201",
    );
    expectBadRequest(
      await call("POST", `/registry/v2beta1/repos/${org}`, { name: "aliased", aliases: Array.from({ length: 51 }, (_, i) => `a${i}`) }),
      "aliases",
      "51 aliases",
    );
  });
});
