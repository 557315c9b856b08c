import { create, createRegistry, fromJson, toJson, type JsonValue as ProtoJsonValue } from "@bufbuild/protobuf";
import { AnySchema, type Any } from "@bufbuild/protobuf/wkt";
import { Code, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema, file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import {
  apiMethods,
  isUnary,
  listResults,
  requestFromJson,
  restCall,
  restRequestFor,
  rpcCall,
  templateVariables,
  type ApiMethod,
  type RestBinding,
} from "../support/api-methods.js";
import { restClient, type JsonObject, type JsonValue, type RestClient } from "../support/clients.js";
import { bind, createGroup, createIdentity, createRole, ok, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// Cross-protocol parity (in the manner of vanguard-go's conformance matrix):
// ONE table of cases, each sent over gRPC, Connect (JSON), gRPC-Web and REST.
// The gRPC outcome is the reference: the case states the code (and ErrorInfo
// reason) it must have, and every other protocol must give the same code,
// message, error details and response (compared as canonical protojson after
// decoding with the method's output descriptor). REST must also use the HTTP
// status the code maps to. Requests are written once in proto JSON; REST
// calls are derived from them by the reverse transcoder of api-methods.ts.

type Protocol = "grpc" | "connect" | "grpc-web" | "rest";
/** The reference first: the others are compared with it. */
const PROTOCOLS: readonly Protocol[] = ["grpc", "connect", "grpc-web", "rest"];

// The standard google.rpc.Code → HTTP mapping (google/rpc/code.proto), written
// here rather than imported from src/errors so the oracle does not share the server's table.
const HTTP_STATUS: Partial<Record<number, number>> = {
  0: 200,
  [Code.InvalidArgument]: 400,
  [Code.FailedPrecondition]: 400,
  [Code.OutOfRange]: 400,
  [Code.Unauthenticated]: 401,
  [Code.PermissionDenied]: 403,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.Aborted]: 409,
  [Code.ResourceExhausted]: 429,
  [Code.Internal]: 500,
  [Code.Unimplemented]: 501,
  [Code.Unavailable]: 503,
  [Code.DeadlineExceeded]: 504,
};

const detailRegistry = createRegistry(file_google_rpc_error_details);
const DIGEST = `sha256:${"d".repeat(64)}`;
/** A well-formed 16-hex uid segment that no resource has (uids are random, so this one is never made). */
const ABSENT = "0000000000000000";

/** Made once, in beforeAll, by the admin over REST. */
interface Fixtures {
  org: string;
  /** Children of the organization, named so that name order differs from uid order. */
  children: { alpha: string; bravo: string; charlie: string };
  /** A child group that holds a group of its own (cannot be deleted). */
  holder: string;
  /** A child group the Update case rewrites (the same write on every protocol). */
  editable: string;
  identity: string;
  role: string;
  binding: string;
  repo: string;
  activeTag: string;
  deprecatedTag: string;
  invite: string;
}

/** What a case's request builder may use besides the fixtures. */
interface Via {
  protocol: Protocol;
  /** Calls a method over the same protocol as the case (to fetch a page token the same way a client would). */
  call(key: string, request: JsonObject): Promise<Outcome>;
}

interface Case {
  name: string;
  method: string;
  request: (fx: Fixtures, via: Via) => JsonObject | Promise<JsonObject>;
  /** The reference (gRPC) code; 0 is OK. */
  expect: 0 | Code;
  /** The reference ErrorInfo reason, when a specific one is expected. */
  reason?: string;
  /** Call without a token. */
  anonymous?: boolean;
  /** Replaces what legitimately differs between protocols (fresh uids, times, per-protocol names). */
  normalize?: (response: JsonObject) => JsonObject;
  /**
   * What the reference error's first violation names: the field of a BadRequest
   * (INVALID_ARGUMENT) or the type of a PreconditionFailure (FAILED_PRECONDITION).
   */
  violation?: string;
  /** Checks that the reference answer is the one the case is about (so four equal wrong answers do not pass). */
  check?: (response: JsonObject, fx: Fixtures) => void;
}

/** One call's outcome, protocol-neutral. */
interface Outcome {
  protocol: Protocol;
  /** google.rpc code, 0 = OK. */
  code: number;
  /** REST only: the HTTP status. */
  httpStatus?: number;
  message: string;
  /** ErrorInfo.reason, when the error has one. */
  reason: string | undefined;
  /** The error details as canonical google.protobuf.Any JSON, in order. */
  details: JsonValue[];
  /** The response as canonical protojson of the method's output (undefined on error). */
  response: JsonObject | undefined;
  /** One line for failure messages. */
  summary: string;
}

// ---------------------------------------------------------------------------
// Calling a method over each protocol.

const METHODS = new Map(apiMethods().map((m) => [m.key, m] as const));

function methodOf(key: string): ApiMethod {
  const m = METHODS.get(key);
  if (!m) throw new Error(`no method ${key}`);
  if (!isUnary(m.method)) throw new Error(`${key} is not unary`);
  return m;
}

let server: TestServer;
let admin: RestClient;
let transports: Record<Exclude<Protocol, "rest">, Transport>;

/** The first REST binding whose path variables the request fills (CreateGroup has one with and one without a parent). */
function bindingFor(m: ApiMethod, request: JsonObject): RestBinding {
  const filled = (b: RestBinding) =>
    templateVariables(b.template).every((path) => {
      let v: JsonValue | undefined = request;
      for (const name of path.split(".")) {
        const field = (v !== null && typeof v === "object" && !Array.isArray(v) ? v : {}) as JsonObject;
        const jsonName = name.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
        v = field[jsonName] ?? field[name];
      }
      return typeof v === "string" && v !== "";
    });
  const binding = m.rest.find(filled) ?? m.rest[0];
  if (!binding) throw new Error(`${m.key} has no REST binding`);
  return binding;
}

const asObject = (v: JsonValue | undefined): JsonObject | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;

const canonicalAny = (any: Any): JsonValue => toJson(AnySchema, any, { registry: detailRegistry }) as JsonValue;

async function invoke(protocol: Protocol, key: string, request: JsonObject, token: string | undefined): Promise<Outcome> {
  const m = methodOf(key);
  const method = m.method;
  if (!isUnary(method)) throw new Error(`${key} is not unary`);
  if (protocol !== "rest") {
    const out = await rpcCall(transports[protocol], method, requestFromJson(method, request), token);
    const details = (out.error?.details ?? []).map((d) =>
      "desc" in d
        ? (toJson(d.desc, create(d.desc, d.value)) as JsonValue)
        : canonicalAny(create(AnySchema, { typeUrl: `type.googleapis.com/${d.type}`, value: d.value })),
    );
    return {
      protocol,
      code: out.code,
      message: out.message,
      reason: out.error?.findDetails(ErrorInfoSchema)[0]?.reason,
      details,
      response: out.response,
      summary: `${protocol}: code ${out.code}${out.code ? ` "${out.message}"` : ` ${JSON.stringify(out.response)}`}`.slice(0, 600),
    };
  }
  const req = restRequestFor(method, bindingFor(m, request), request);
  const res = await restCall(server.url, req, token);
  const body = asObject(res.json) ?? {};
  const head = `rest: ${req.httpMethod} ${req.path} → ${res.status} ${res.text}`.slice(0, 600);
  if (res.status === 200) {
    // Decoding with the output descriptor both checks the body is a valid rendering of it and drops what protojson treats as defaults.
    let response: JsonObject | undefined;
    try {
      response = toJson(method.output, fromJson(method.output, body as ProtoJsonValue)) as JsonObject;
    } catch (e) {
      return {
        protocol,
        code: -1,
        httpStatus: res.status,
        message: `undecodable 200 body: ${String(e)}`,
        reason: undefined,
        details: [],
        response: undefined,
        summary: head,
      };
    }
    return { protocol, code: 0, httpStatus: res.status, message: "", reason: undefined, details: [], response, summary: head };
  }
  const rawDetails = Array.isArray(body["details"]) ? (body["details"] as JsonValue[]) : [];
  const details = rawDetails.map((d) => {
    try {
      return canonicalAny(fromJson(AnySchema, d as ProtoJsonValue, { registry: detailRegistry }));
    } catch {
      return d; // Left as sent: the comparison then shows it.
    }
  });
  const info = rawDetails.map(asObject).find((d) => d?.["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
  return {
    protocol,
    code: typeof body["code"] === "number" ? body["code"] : -res.status,
    httpStatus: res.status,
    message: typeof body["message"] === "string" ? body["message"] : "",
    reason: typeof info?.["reason"] === "string" ? info["reason"] : undefined,
    details,
    response: undefined,
    summary: head,
  };
}

// ---------------------------------------------------------------------------
// Normalizers and checks.

/** The field of a BadRequest's first violation, or the type of a PreconditionFailure's. */
function firstViolation(details: JsonValue[]): string | undefined {
  for (const d of details.map(asObject)) {
    if (d?.["@type"] === "type.googleapis.com/google.rpc.BadRequest")
      return asObject((d["fieldViolations"] as JsonValue[] | undefined)?.[0])?.["field"] as string | undefined;
    if (d?.["@type"] === "type.googleapis.com/google.rpc.PreconditionFailure")
      return asObject((d["violations"] as JsonValue[] | undefined)?.[0])?.["type"] as string | undefined;
  }
  return undefined;
}

const IAM = "platform.iam.v2beta1";
const REGISTRY = "platform.registry.v2beta1";

/** A List response with its opaque page token reduced to whether there is one. */
const pageTokenPresence = (r: JsonObject): JsonObject => ({ ...r, ...(r["nextPageToken"] ? { nextPageToken: "<more>" } : {}) });

/** A freshly written resource: its uid, times and per-protocol name are new on every call. */
const freshResource = (r: JsonObject): JsonObject => ({
  ...r,
  ...(r["uid"] ? { uid: "<uid>" } : {}),
  ...(r["createTime"] ? { createTime: "<time>" } : {}),
  ...(r["updateTime"] ? { updateTime: "<time>" } : {}),
  ...(typeof r["name"] === "string" ? { name: r["name"].replace(/-(grpc|connect|grpc-web|rest)$/, "-<protocol>") } : {}),
});

const namesOf = (key: string, r: JsonObject): JsonValue[] => listResults(methodOf(key).method.output, r).map((x) => x["name"] ?? null);

/** The groups in alpha/bravo/charlie's parent, by name. */
const listChildren = (fx: Fixtures, extra: JsonObject = {}): JsonObject => ({ uidp: { childrenOf: fx.org }, ...extra });

// ---------------------------------------------------------------------------
// The table.

const CASES: Case[] = [
  // Gets of each resource kind.
  {
    name: "GetGroup (a child group)",
    method: `${IAM}.GroupsService/GetGroup`,
    request: (fx) => ({ uid: fx.children.alpha }),
    expect: 0,
    check: (r, fx) => expect(r).toMatchObject({ uid: fx.children.alpha, name: "alpha" }),
  },
  {
    name: "GetGroup (the organization)",
    method: `${IAM}.GroupsService/GetGroup`,
    request: (fx) => ({ uid: fx.org }),
    expect: 0,
    check: (r, fx) => expect(r["uid"]).toBe(fx.org),
  },
  {
    name: "GetIdentity",
    method: `${IAM}.IdentitiesService/GetIdentity`,
    request: (fx) => ({ uid: fx.identity }),
    expect: 0,
    check: (r) =>
      expect(r).toMatchObject({
        name: "someone",
        description: "made for parity",
        claimMatch: { issuer: "https://issuer.example", subject: "someone" },
      }),
  },
  {
    name: "GetRole (custom)",
    method: `${IAM}.RolesService/GetRole`,
    request: (fx) => ({ uid: fx.role }),
    expect: 0,
    check: (r, fx) => expect(r).toMatchObject({ name: "reader", capabilities: ["CAP_IAM_GROUPS_LIST", "CAP_REPO_LIST"], parent: fx.org }),
  },
  {
    name: "GetRole (built-in viewer)",
    method: `${IAM}.RolesService/GetRole`,
    request: () => ({ uid: "viewer" }),
    expect: 0,
    check: (r) => expect((r["capabilities"] as string[]).length).toBeGreaterThan(0),
  },
  {
    name: "GetRoleBinding (hydrated identity, group and role)",
    method: `${IAM}.RoleBindingsService/GetRoleBinding`,
    request: (fx) => ({ uid: fx.binding }),
    expect: 0,
    check: (r, fx) =>
      expect(r).toMatchObject({
        identity: { uid: fx.identity, name: "someone" },
        group: { uid: fx.org },
        role: { uid: fx.role, name: "reader" },
      }),
  },
  {
    name: "GetRepo (active tags only)",
    method: `${REGISTRY}.ReposService/GetRepo`,
    request: (fx) => ({ uid: fx.repo }),
    expect: 0,
    check: (r) => expect(r).toMatchObject({ name: "app", activeTags: ["v1"] }),
  },
  {
    name: "GetTag (deprecated)",
    method: `${REGISTRY}.TagsService/GetTag`,
    request: (fx) => ({ uid: fx.deprecatedTag }),
    expect: 0,
    check: (r) => expect(r).toMatchObject({ name: "v0", digest: DIGEST, deprecated: true }),
  },
  {
    name: "GetAccountAssociation",
    method: `${IAM}.AccountAssociationsService/GetAccountAssociation`,
    request: (fx) => ({ uid: fx.org }),
    expect: 0,
    check: (r) => expect(r).toMatchObject({ name: "accounts", amazon: { account: "123456789012" } }),
  },
  {
    name: "GetGroupInvite (hydrated role)",
    method: `${IAM}.GroupInvitesService/GetGroupInvite`,
    request: (fx) => ({ uid: fx.invite }),
    expect: 0,
    check: (r, fx) => expect(r).toMatchObject({ uid: fx.invite, roleUid: fx.role, role: { uid: fx.role } }),
  },

  // Lists: scopes, filters, ordering, paging.
  {
    name: "ListGroups children_of, order_by name",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx, { orderBy: "name" }),
    expect: 0,
    normalize: pageTokenPresence,
    check: (r) => {
      expect(namesOf(`${IAM}.GroupsService/ListGroups`, r)).toEqual(["alpha", "bravo", "charlie", "editable", "holder"]);
      expect(r["totalCount"]).toBe("5");
    },
  },
  {
    name: "ListGroups page_size 2, order_by name desc (first page)",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx, { pageSize: 2, orderBy: "name desc" }),
    expect: 0,
    normalize: pageTokenPresence,
    check: (r) => {
      expect(namesOf(`${IAM}.GroupsService/ListGroups`, r)).toEqual(["holder", "editable"]);
      expect(r).toMatchObject({ totalCount: "5", nextPageToken: "<more>" });
    },
  },
  {
    name: "ListGroups second page, by the first page's token",
    method: `${IAM}.GroupsService/ListGroups`,
    request: async (fx, via) => {
      const first = await via.call(`${IAM}.GroupsService/ListGroups`, listChildren(fx, { pageSize: 2, orderBy: "name desc" }));
      const token = first.response?.["nextPageToken"];
      if (typeof token !== "string" || token === "") throw new Error(`no first page over ${via.protocol}: ${first.summary}`);
      return listChildren(fx, { pageSize: 2, orderBy: "name desc", pageToken: token });
    },
    expect: 0,
    normalize: pageTokenPresence,
    check: (r) => {
      expect(namesOf(`${IAM}.GroupsService/ListGroups`, r)).toEqual(["charlie", "bravo"]);
      // The total is carried in the token from the first page.
      expect(r).toMatchObject({ totalCount: "5", nextPageToken: "<more>" });
    },
  },
  {
    name: "ListGroups name filter",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => ({ uidp: { descendantsOf: fx.org }, name: "bravo" }),
    expect: 0,
    check: (r, fx) => {
      expect(listResults(methodOf(`${IAM}.GroupsService/ListGroups`).method.output, r).map((g) => g["uid"])).toEqual([fx.children.bravo]);
      expect(r["totalCount"]).toBe("1");
    },
  },
  {
    name: "ListGroups skip 3, order_by create_time",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx, { orderBy: "create_time", skip: 3 }),
    expect: 0,
    normalize: pageTokenPresence,
    check: (r) => expect(r).toMatchObject({ skipped: 3, totalCount: "5" }),
  },
  {
    name: "ListIdentities in_root",
    method: `${IAM}.IdentitiesService/ListIdentities`,
    request: (fx) => ({ uidp: { inRoot: fx.org } }),
    expect: 0,
    normalize: pageTokenPresence,
    check: (r) => expect(namesOf(`${IAM}.IdentitiesService/ListIdentities`, r)).toEqual(["someone"]),
  },
  {
    name: "ListRoles in_root, order_by name",
    method: `${IAM}.RolesService/ListRoles`,
    request: (fx) => ({ uidp: { inRoot: fx.org }, orderBy: "name" }),
    expect: 0,
    normalize: pageTokenPresence,
    check: (r) => expect(namesOf(`${IAM}.RolesService/ListRoles`, r)).toContain("reader"),
  },
  {
    name: "ListRoleBindings identity filter (hydrated)",
    method: `${IAM}.RoleBindingsService/ListRoleBindings`,
    request: (fx) => ({ uidp: { inRoot: fx.org }, identity: fx.identity }),
    expect: 0,
    normalize: pageTokenPresence,
    check: (r, fx) => {
      const rows = listResults(methodOf(`${IAM}.RoleBindingsService/ListRoleBindings`).method.output, r);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ uid: fx.binding, role: { uid: fx.role, name: "reader" }, identity: { uid: fx.identity } });
    },
  },
  {
    name: "ListRepos in_root, name filter",
    method: `${REGISTRY}.ReposService/ListRepos`,
    request: (fx) => ({ uidp: { inRoot: fx.org }, name: "app" }),
    expect: 0,
    check: (r) => expect(namesOf(`${REGISTRY}.ReposService/ListRepos`, r)).toEqual(["app"]),
  },
  {
    name: "ListTags in_root, order_by name desc",
    method: `${REGISTRY}.TagsService/ListTags`,
    request: (fx) => ({ uidp: { inRoot: fx.org }, orderBy: "name desc" }),
    expect: 0,
    check: (r, fx) =>
      expect(listResults(methodOf(`${REGISTRY}.TagsService/ListTags`).method.output, r).map((t) => [t["uid"], t["name"]])).toEqual([
        [fx.activeTag, "v1"],
        [fx.deprecatedTag, "v0"],
      ]),
  },

  // Errors.
  {
    name: "NOT_FOUND: GetGroup of a missing uid",
    method: `${IAM}.GroupsService/GetGroup`,
    request: (fx) => ({ uid: `${fx.org}/${ABSENT}` }),
    expect: Code.NotFound,
    reason: "NOT_FOUND",
  },
  {
    name: "NOT_FOUND: GetRepo of a missing uid",
    method: `${REGISTRY}.ReposService/GetRepo`,
    request: (fx) => ({ uid: `${fx.org}/${ABSENT}` }),
    expect: Code.NotFound,
    reason: "NOT_FOUND",
  },
  {
    name: "INVALID_ARGUMENT: GetGroup of a malformed uid",
    method: `${IAM}.GroupsService/GetGroup`,
    request: () => ({ uid: "not-a-uid" }),
    expect: Code.InvalidArgument,
    reason: "INVALID_ARGUMENT",
    violation: "uid",
  },
  {
    name: "INVALID_ARGUMENT: ListGroups unknown order_by field",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx, { orderBy: "colour" }),
    expect: Code.InvalidArgument,
    reason: "INVALID_ARGUMENT",
    violation: "order_by",
  },
  {
    name: "INVALID_ARGUMENT: ListGroups forged page_token",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx, { pageToken: "bm90LWEtdG9rZW4.AAAA" }),
    expect: Code.InvalidArgument,
    reason: "INVALID_ARGUMENT",
    violation: "page_token",
  },
  {
    name: "INVALID_ARGUMENT: ListGroups negative page_size",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx, { pageSize: -1 }),
    expect: Code.InvalidArgument,
    reason: "INVALID_ARGUMENT",
    violation: "page_size",
  },
  {
    name: "INVALID_ARGUMENT: UpdateGroup unknown update_mask path",
    method: `${IAM}.GroupsService/UpdateGroup`,
    request: (fx) => ({ group: { uid: fx.editable, description: "never" }, updateMask: "colour" }),
    expect: Code.InvalidArgument,
    reason: "INVALID_ARGUMENT",
    violation: "update_mask",
  },
  {
    name: "INVALID_ARGUMENT: CreateGroup with an invalid name",
    method: `${IAM}.GroupsService/CreateGroup`,
    request: (fx) => ({ parent: fx.org, group: { name: "Not Valid!" } }),
    expect: Code.InvalidArgument,
    reason: "INVALID_ARGUMENT",
    // Resource validation names the field within the resource (the same on every protocol).
    violation: "name",
  },
  {
    name: "ALREADY_EXISTS: CreateGroup with a sibling's name",
    method: `${IAM}.GroupsService/CreateGroup`,
    request: (fx) => ({ parent: fx.org, group: { name: "alpha" } }),
    expect: Code.AlreadyExists,
    reason: "ALREADY_EXISTS",
  },
  {
    name: "FAILED_PRECONDITION: DeleteGroup of a group holding a child",
    method: `${IAM}.GroupsService/DeleteGroup`,
    request: (fx) => ({ uid: fx.holder }),
    expect: Code.FailedPrecondition,
    // docs/design.md: the ErrorInfo reason is the code's name; RESOURCE_NOT_EMPTY is the PreconditionFailure type.
    reason: "FAILED_PRECONDITION",
    violation: "RESOURCE_NOT_EMPTY",
  },
  {
    name: "UNAUTHENTICATED: GetGroup without a token",
    method: `${IAM}.GroupsService/GetGroup`,
    request: (fx) => ({ uid: fx.children.alpha }),
    anonymous: true,
    expect: Code.Unauthenticated,
    reason: "UNAUTHENTICATED",
  },
  {
    name: "UNAUTHENTICATED: ListGroups without a token",
    method: `${IAM}.GroupsService/ListGroups`,
    request: (fx) => listChildren(fx),
    anonymous: true,
    expect: Code.Unauthenticated,
    reason: "UNAUTHENTICATED",
  },

  // Writes that succeed on every protocol.
  {
    name: "CreateGroup (a per-protocol name)",
    method: `${IAM}.GroupsService/CreateGroup`,
    request: (fx, via) => ({ parent: fx.org, group: { name: `made-${via.protocol}`, description: "written four ways" } }),
    expect: 0,
    normalize: freshResource,
    check: (r) =>
      expect(r).toMatchObject({ uid: "<uid>", name: "made-<protocol>", description: "written four ways", createTime: "<time>" }),
  },
  {
    name: "UpdateGroup description with update_mask",
    method: `${IAM}.GroupsService/UpdateGroup`,
    request: (fx) => ({ group: { uid: fx.editable, description: "edited", name: "ignored-by-mask" }, updateMask: "description" }),
    expect: 0,
    // The same write each time: only the update time moves.
    normalize: (r) => ({ ...r, updateTime: "<time>" }),
    check: (r, fx) => expect(r).toMatchObject({ uid: fx.editable, name: "editable", description: "edited" }),
  },
  {
    name: "DeleteGroup (a fresh group per protocol)",
    method: `${IAM}.GroupsService/DeleteGroup`,
    request: async (fx, via) => ({ uid: uidOf(await createGroup(admin, `doomed-${via.protocol}`, fx.org)) }),
    expect: 0,
    check: (r) => expect(r).toEqual({}),
  },
];

// ---------------------------------------------------------------------------

let fx: Fixtures;

beforeAll(async () => {
  server = await sharedServer();
  admin = restClient(server.url, server.token);
  transports = {
    grpc: createGrpcTransport({ baseUrl: server.url }),
    // connect-node speaks binary by default; the case is about Connect's JSON codec.
    connect: createConnectTransport({ baseUrl: server.url, httpVersion: "1.1", useBinaryFormat: false }),
    "grpc-web": createGrpcWebTransport({ baseUrl: server.url, httpVersion: "1.1" }),
  };
  const post = async (path: string, body: JsonObject) => uidOf(await ok(admin("POST", path, body)));

  const org = uidOf(await createGroup(admin, `parity-${randomBytes(4).toString("hex")}`));
  // Made out of name order, so that ordering by name is visible.
  const charlie = uidOf(await createGroup(admin, "charlie", org));
  const alpha = uidOf(await createGroup(admin, "alpha", org));
  const bravo = uidOf(await createGroup(admin, "bravo", org));
  const holder = uidOf(await createGroup(admin, "holder", org));
  await createGroup(admin, "held", holder);
  const editable = uidOf(await createGroup(admin, "editable", org));
  const identity = uidOf(
    await createIdentity(admin, org, {
      name: "someone",
      description: "made for parity",
      claimMatch: { issuer: "https://issuer.example", subject: "someone" },
    }),
  );
  const role = uidOf(await createRole(admin, org, { name: "reader", capabilities: ["groups.list", "repo.list"] }));
  const binding = uidOf(await ok(bind(admin, org, identity, role)));
  const repo = await post(`/registry/v2beta1/repos/${org}`, { name: "app" });
  const activeTag = await post(`/registry/v2beta1/tags/${repo}`, { name: "v1", digest: DIGEST });
  const deprecatedTag = await post(`/registry/v2beta1/tags/${repo}`, { name: "v0", digest: DIGEST, deprecated: true });
  await post(`/iam/v2beta1/accountAssociations/${org}`, { name: "accounts", amazon: { account: "123456789012" } });
  const invite = await post(`/iam/v2beta1/groupInvites/${org}`, { roleUid: role, ttl: "86400s" });
  fx = { org, children: { alpha, bravo, charlie }, holder, editable, identity, role, binding, repo, activeTag, deprecatedTag, invite };
});

describe("the parity table", () => {
  it("names only existing unary methods with a REST binding", () => {
    const broken = CASES.filter((c) => {
      const m = METHODS.get(c.method);
      return !m || !isUnary(m.method) || m.rest.length === 0;
    }).map((c) => `${c.name}: ${c.method}`);
    expect(broken).toEqual([]);
    expect(CASES.length).toBeGreaterThanOrEqual(25);
  });
});

describe.each(CASES.map((c) => [c.name, c] as const))("%s", (_name, c) => {
  it("gives the same outcome over gRPC, Connect, gRPC-Web and REST", async () => {
    const token = c.anonymous ? undefined : server.token;
    const outcomes: Outcome[] = [];
    // One protocol after another: a write must not race its twin on another protocol.
    for (const protocol of PROTOCOLS) {
      const via: Via = { protocol, call: (key, request) => invoke(protocol, key, request, token) };
      const request = await c.request(fx, via);
      const out = await invoke(protocol, c.method, request, token);
      if (out.response && c.normalize) out.response = c.normalize(out.response);
      outcomes.push(out);
    }
    const table = outcomes.map((o) => `  ${o.summary}`).join("\n");
    const [reference, ...others] = outcomes as [Outcome, ...Outcome[]];

    // The reference is the answer the case is about.
    expect({ code: reference.code, reason: c.reason === undefined ? undefined : reference.reason }, `gRPC reference\n${table}`).toEqual({
      code: c.expect,
      reason: c.reason,
    });
    if (c.expect === 0) c.check?.(reference.response ?? {}, fx);
    else expect(reference.details.length, `gRPC error without details\n${table}`).toBeGreaterThan(0);
    if (c.violation !== undefined) expect(firstViolation(reference.details), `gRPC reference\n${table}`).toBe(c.violation);

    const mismatches: string[] = [];
    for (const o of others) {
      const differs = (what: string, got: unknown, want: unknown) => {
        if (JSON.stringify(got) !== JSON.stringify(want))
          mismatches.push(`${o.protocol} ${what}: got ${JSON.stringify(got)}, gRPC ${JSON.stringify(want)}`);
      };
      differs("code", o.code, reference.code);
      differs("message", o.message, reference.message);
      differs("reason", o.reason, reference.reason);
      differs("details", o.details, reference.details);
      differs("response", o.response, reference.response);
      if (o.protocol === "rest") differs("HTTP status", o.httpStatus, HTTP_STATUS[reference.code]);
    }
    expect(mismatches, `outcomes:\n${table}`).toEqual([]);
  });
});
