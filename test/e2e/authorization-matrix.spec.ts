import { create, toJson, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { Code, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { beforeAll, describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Authorization_Scope, type Authorization } from "../../gen/platform/common/v1/authorization_pb.js";
import { BUILT_IN_ROLES, dottedCapabilities } from "../../src/capabilities/index.js";
import { standardMethodOf, type StandardMethod } from "../../src/descriptors/index.js";
import { API_SERVICES } from "../../src/services/index.js";
import { V1_TABLE } from "../../src/services/v1/table.js";
import {
  apiMethods,
  fillTemplate,
  isUnary,
  listResults,
  requestFromJson,
  restCall,
  restRequestFor,
  rpcCall,
  type ApiMethod,
} from "../support/api-methods.js";
import { restClient, type JsonObject, type JsonValue, type RestClient } from "../support/clients.js";
import { bind, bootstrapIdentityUid, createGroup, createIdentity, createRole, ok, uidOf } from "../support/rest-iam.js";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// Role × RPC: every method of every API service (read from the descriptors),
// called as an identity bound at an organization with each built-in role and
// two custom roles, on resources of that organization and of another one.
// The oracle is the method's own declaration (capability + scope) and the
// role's capabilities:
//   SCOPE_RESOURCE  held → anything but PERMISSION_DENIED / UNAUTHENTICATED; not held → PERMISSION_DENIED
//   SCOPE_LIST      always answers; results non-empty when held, empty when not (and always empty for the other org)
//   SCOPE_ANY       held anywhere → allowed; else PERMISSION_DENIED
//   SCOPE_ROOT      PERMISSION_DENIED for every organization-level role
// What a Create carries is the resource's own `example`, beside its definition
// (src/services/<domain>/<resources>.ts). Requests that hand out a role
// (bindings, invites, IdP default roles, role capabilities) stay within the
// caller's grant ceiling: they use the caller's own role or its own
// capabilities, so only the declared capability decides.

const OIDC = { issuer: "https://accounts.example.com", clientId: "platform" };
const DIGEST = `sha256:${"c".repeat(64)}`;

interface RoleUnderTest {
  name: string;
  /** Built-in roles are bound by uid; custom ones are created in each organization with these capabilities. */
  builtIn: boolean;
  capabilities: string[];
}

const builtIn = (name: string): RoleUnderTest => {
  const role = BUILT_IN_ROLES.find((r) => r.uid === name);
  if (!role) throw new Error(`no built-in role ${name}`);
  return { name, builtIn: true, capabilities: [...role.capabilities] };
};

const ROLES: RoleUnderTest[] = [
  builtIn("viewer"),
  builtIn("editor"),
  builtIn("owner"),
  builtIn("registry.pull"),
  builtIn("registry.push"),
  { name: "custom-lister", builtIn: false, capabilities: ["repo.list", "groups.list"] },
  {
    name: "custom-binder",
    builtIn: false,
    capabilities: ["role_bindings.create", "role_bindings.list", "identity.list", "roles.list", "groups.list"],
  },
];

let server: TestServer;
let admin: RestClient;
let grpc: Transport;
let advisoryUid = "";
/** A root binding the admin made (of the bootstrap identity): root-scope methods target it. */
let rootBindingUid = "";
let counter = 0;
const n = () => ++counter;

/** The caller's role in an organization: its uid there and its capabilities. */
interface CallerRole {
  uid: string;
  capabilities: string[];
}

/** An organization and one of each resource in it, made by the admin. */
interface Org {
  uid: string;
  child: string;
  identity: string;
  role: string;
  binding: string;
  idp: string;
  invite: string;
  repo: string;
  tag: string;
  subscription: string;
  /** The role the requests hand out (the caller's own: within its grant ceiling). */
  caller: CallerRole;
  /** Fresh resources, for Deletes (and identities to bind). */
  fresh: Record<Kind, () => Promise<string>>;
  /** Resources of the services the generic kind covers, one each, by service name. */
  generic: Map<string, string>;
}

type Kind =
  | "group"
  | "identity"
  | "role"
  | "binding"
  | "rootBinding"
  | "idp"
  | "association"
  | "invite"
  | "repo"
  | "tag"
  | "advisory"
  | "subscription"
  | "event";

const post = async (path: string, body: JsonObject) => uidOf(await ok(admin("POST", path, body)));

async function makeOrg(label: string, caller: RoleUnderTest): Promise<Org> {
  const org = uidOf(await createGroup(admin, `${label}-${n()}`));
  const callerUid = caller.builtIn
    ? caller.name
    : uidOf(await createRole(admin, org, { name: caller.name, capabilities: caller.capabilities }));
  const role: CallerRole = { uid: callerUid, capabilities: caller.capabilities };
  const fresh: Org["fresh"] = {
    group: async () => uidOf(await createGroup(admin, `doomed-${n()}`, org)),
    identity: async () => uidOf(await createIdentity(admin, org, { name: `fresh-${n()}` })),
    role: async () => uidOf(await createRole(admin, org, { name: `doomed-${n()}`, capabilities: role.capabilities })),
    binding: async () => uidOf(await ok(bind(admin, org, await fresh.identity(), role.uid))),
    idp: () => createExample(v2("IdentityProvidersService"), org, role),
    association: async () => {
      const g = await fresh.group();
      await createExample(v2("AccountAssociationsService"), g, role);
      return g;
    },
    invite: () => createExample(v2("GroupInvitesService"), org, role),
    repo: () => createExample(v2("ReposService"), org, role),
    tag: () => createExample(v2("TagsService"), repo, role),
    advisory: async () => advisoryUid,
    rootBinding: async () => rootBindingUid,
    subscription: () => createExample(v2("SubscriptionsService"), org, role),
    event: () => Promise.reject(new Error("events are recorded, not made")),
  };
  const repo = await fresh.repo();
  const generic = new Map<string, string>();
  for (const service of GENERIC_SERVICES) generic.set(service.name, await createExample(service, org, role));
  await createExample(v2("AccountAssociationsService"), org, role);
  const identity = await fresh.identity();
  return {
    uid: org,
    child: uidOf(await createGroup(admin, "child", org)),
    identity,
    role: await fresh.role(),
    binding: uidOf(await ok(bind(admin, org, identity, role.uid))),
    idp: await fresh.idp(),
    invite: await fresh.invite(),
    repo,
    tag: await fresh.tag(),
    subscription: await fresh.subscription(),
    caller: role,
    fresh,
    generic,
  };
}

// ---------------------------------------------------------------------------
// Requests, derived from the method's name, its declaration and its input
// descriptor; a Create carries the resource's example; per resource kind only
// what an Update carries and where the resources are.

interface KindSpec {
  /** The existing resource a Get or an Update targets. */
  existing(o: Org): string;
  /** The parent of a Create. */
  parent(o: Org): string;
  /**
   * The resource message of a Create when it is not the resource's example: v1 bindings name
   * their identity and role otherwise (one to be refused need not name new resources).
   */
  create?(o: Org, v1: boolean, denied?: boolean): Promise<JsonObject>;
  /** The fields an Update sets (besides the uid). v1 Updates replace the whole resource. */
  update(o: Org, v1: boolean): JsonObject;
}

/** The resource a service serves: its own, or for a v1 service its v2beta1 twin's. */
function resourceOf(service: DescService) {
  const twin = V1_TABLE.find((row) => row.v1 === service)?.v2 ?? service;
  return API_SERVICES.find((s) => s.service === twin)?.resource;
}

/** The v2beta1 service of that name, which the fixtures create through. */
function v2(name: string): DescService {
  const service = API_SERVICES.find((s) => s.service.name === name && s.service.typeName.includes(".v2beta1."))?.service;
  if (!service) throw new Error(`no v2beta1 service ${name}`);
  return service;
}

/** The JSON of the resource's example, made unique and handing out the caller's role (within its grant ceiling). */
function example(service: DescService, caller: CallerRole): JsonObject {
  const resource = resourceOf(service);
  if (!resource?.example) throw new Error(`${service.typeName}: its resource has no example (an \`example\` beside its definition)`);
  const made = resource.example({ unique: String(n()), role: caller.uid, capabilities: caller.capabilities });
  return toJson(resource.schema, create(resource.schema, made)) as JsonObject;
}

const KIND_OF_SERVICE: Record<string, Kind> = {
  GroupsService: "group",
  IdentitiesService: "identity",
  RolesService: "role",
  RoleBindingsService: "binding",
  RootRoleBindingsService: "rootBinding",
  IdentityProvidersService: "idp",
  AccountAssociationsService: "association",
  GroupInvitesService: "invite",
  ReposService: "repo",
  TagsService: "tag",
  AdvisoriesService: "advisory",
  SubscriptionsService: "subscription",
  EventsService: "event",
};

const onlyListed = () => {
  throw new Error("events are only listed");
};

const KINDS: Record<Kind, KindSpec> = {
  group: {
    existing: (o) => o.child,
    parent: (o) => o.uid,
    update: (_o, v1) => ({ ...(v1 ? { name: `renamed-${n()}` } : {}), description: "changed" }),
  },
  identity: {
    existing: (o) => o.identity,
    parent: (o) => o.uid,
    update: (_o, v1) => ({ ...(v1 ? { name: `someone-${n()}` } : {}), description: "changed" }),
  },
  role: {
    existing: (o) => o.role,
    parent: (o) => o.uid,
    update: (o, v1) => ({ ...(v1 ? { name: `spare-${n()}` } : {}), description: "changed", capabilities: o.caller.capabilities }),
  },
  binding: {
    existing: (o) => o.binding,
    parent: (o) => o.uid,
    // v2 Creates of bindings are OVERRIDES: their requests carry no RoleBinding.
    create: async (o, _v1, denied): Promise<JsonObject> => ({ identity: await identityToBind(o, denied), role: o.caller.uid }),
    update: (o, v1): JsonObject => (v1 ? { identity: o.identity, role: o.caller.uid } : { roleUid: o.caller.uid }),
  },
  idp: {
    existing: (o) => o.idp,
    parent: (o) => o.uid,
    update: (o) => ({ description: "changed", defaultRole: o.caller.uid }),
  },
  association: {
    existing: (o) => o.uid,
    // The organization has its association already; its child has none.
    parent: (o) => o.child,
    update: () => ({ description: "changed" }),
  },
  invite: {
    existing: (o) => o.invite,
    parent: (o) => o.uid,
    update: () => ({}),
  },
  repo: {
    existing: (o) => o.repo,
    parent: (o) => o.uid,
    update: (_o, v1) => ({ ...(v1 ? { name: `app-${n()}` } : {}), description: "changed" }),
  },
  tag: {
    existing: (o) => o.tag,
    parent: (o) => o.repo,
    update: (_o, v1) => ({ ...(v1 ? { name: `v${n()}`, digest: DIGEST } : {}), deprecated: true }),
  },
  rootBinding: {
    existing: () => rootBindingUid,
    parent: () => "",
    update: () => ({}),
  },
  advisory: {
    existing: () => advisoryUid,
    parent: () => "",
    update: () => ({}),
  },
  subscription: {
    existing: (o) => o.subscription,
    parent: (o) => o.uid,
    update: () => ({ description: "changed" }),
  },
  event: { existing: onlyListed, parent: onlyListed, update: onlyListed },
};

/** An identity for a new binding: a new one, or for a request to be refused the organization's own. */
const identityToBind = async (o: Org, denied = false) => (denied ? o.identity : o.fresh.identity());

/** Methods whose request shape the generic rules do not cover. */
const OVERRIDES: Record<string, (o: Org, denied: boolean) => Promise<JsonObject>> = {
  "platform.iam.v2beta1.RoleBindingsService/CreateRoleBinding": async (o, denied) => ({
    parent: o.uid,
    identityUid: await identityToBind(o, denied),
    roleUid: o.caller.uid,
  }),
  "platform.iam.v2beta1.RoleBindingsService/BatchCreateRoleBindings": async (o, denied) => ({
    parent: o.uid,
    requests: [{ parent: o.uid, identityUid: await identityToBind(o, denied), roleUid: o.caller.uid }],
  }),
  // A root binding of a root-level identity (the bootstrap one) to a built-in role: everything but the caller's grants is valid.
  "platform.iam.v2beta1.RootRoleBindingsService/CreateRootRoleBinding": async () => ({
    identityUid: bootstrapIdentityUid(server.token),
    roleUid: "viewer",
  }),
  "platform.vulnerabilities.v2beta1.AdvisoriesService/ImportAdvisories": async () => ({
    documents: [{ id: `CVE-2099-${String(n()).padStart(5, "0")}`, modified: "2024-01-01T00:00:00Z", aliases: [] }],
  }),
};

// The standard methods a case is built for; any other method needs an override.
const BUILT_VERBS: ReadonlySet<StandardMethod | undefined> = new Set(["List", "Get", "Create", "Update", "Delete"]);

/** The REST route of the service's Create, when it takes a group as `parent` and the resource. */
function createRoute(service: DescService): { method: DescMethod; template: string } | undefined {
  const method = service.methods.find((m) => standardMethodOf(m) === "Create");
  const binding = method && apiMethods().find((a) => a.method === method)?.rest[0];
  if (!method || !binding || !method.input.fields.some((f) => f.name === "parent")) return undefined;
  const body = method.input.fields.find((f) => f.fieldKind === "message" && f.message === method.output);
  return body ? { method, template: binding.template } : undefined;
}

/** A new resource of the service in `parent`, made by the admin from the resource's example; its uid. */
async function createExample(service: DescService, parent: string, caller: CallerRole): Promise<string> {
  const route = createRoute(service);
  if (!route) throw new Error(`${service.typeName}: no Create of the resource in a parent`);
  return post(
    fillTemplate(route.template, () => parent),
    example(service, caller),
  );
}

/**
 * A resource with no kind above (a new one) is covered when it has the usual
 * shape: Create takes a group as `parent` and the resource. One is made per
 * organization from the resource's example, and an Update sets what the
 * example does.
 */
const GENERIC_SERVICES: DescService[] = [...new Set(apiMethods().map((m) => m.service))].filter(
  (s) => !KIND_OF_SERVICE[s.name] && createRoute(s) !== undefined,
);

function genericKind(service: DescService): KindSpec & { fresh(o: Org): Promise<string> } {
  return {
    existing: (o) => o.generic.get(service.name)!,
    parent: (o) => o.uid,
    update: (o) => example(service, o.caller),
    fresh: (o) => createExample(service, o.uid, o.caller),
  };
}

/**
 * Streaming methods are authorized by the same declaration and pipeline; the
 * matrix calls unary methods, and each streaming one is covered by the suite
 * named here (its visibility, and a missing token refused).
 */
const STREAMING_COVERED_BY: Record<string, string> = {
  "platform.events.v2beta1.EventsService/WatchEvents": "test/e2e/events.spec.ts",
};

/** Why a method has no case builder, or undefined when it has one. */
function missingBuilder(m: ApiMethod): string | undefined {
  if (!isUnary(m.method)) return STREAMING_COVERED_BY[m.key] ? undefined : `${m.key}: ${m.method.methodKind} methods have no case builder`;
  if (!m.authorization) return `${m.key}: no authorization declaration`;
  if (OVERRIDES[m.key]) return undefined;
  if (!KIND_OF_SERVICE[m.service.name] && !GENERIC_SERVICES.includes(m.service))
    return `${m.key}: no resource kind for service ${m.service.name}`;
  if (!BUILT_VERBS.has(standardMethodOf(m.method))) return `${m.key}: no case builder for this verb`;
  return undefined;
}

/** Sets a proto-name path (`role_binding.uid`) in a request's JSON form, by the JSON names of the fields. */
function setPath(message: DescMessage, json: JsonObject, path: string, value: JsonValue): JsonObject {
  const [head, ...rest] = path.split(".");
  const field = message.fields.find((f) => f.name === head);
  if (!field) throw new Error(`${message.typeName} has no field ${head}`);
  if (rest.length === 0) {
    json[field.jsonName] = value;
  } else {
    if (field.fieldKind !== "message") throw new Error(`${message.typeName}.${head} is not a message`);
    const inner = (json[field.jsonName] ?? {}) as JsonObject;
    json[field.jsonName] = setPath(field.message, inner, rest.join("."), value);
  }
  return json;
}

/**
 * The request for `m` in `o`. When it is to be refused (`denied`), a Delete targets a resource
 * that stays and a binding names an identity that exists, instead of new ones made for it: made
 * for nothing, they were a third of the matrix's writes. Should the server let such a request
 * through, it is reported, and what it removed shows in the cases after it.
 */
async function buildRequest(m: ApiMethod, o: Org, denied = false): Promise<JsonObject> {
  const why = missingBuilder(m);
  if (why) throw new Error(why);
  const override = OVERRIDES[m.key];
  if (override) return override(o, denied);
  const kind = KIND_OF_SERVICE[m.service.name];
  const generic = kind ? undefined : genericKind(m.service);
  const spec = kind ? KINDS[kind] : generic!;
  const decl = m.authorization!;
  const input = m.method.input;
  const v1 = m.service.typeName.includes(".v1.");
  const verb = standardMethodOf(m.method);
  const resourceField = decl.resourceField || "uid";
  switch (verb) {
    case "List":
      return decl.scope === Authorization_Scope.LIST && input.fields.some((f) => f.name === "uidp") ? { uidp: { inRoot: o.uid } } : {};
    case "Get":
      return setPath(input, {}, resourceField, spec.existing(o));
    case "Delete":
      if (denied) return setPath(input, {}, resourceField, spec.existing(o));
      return setPath(input, {}, resourceField, kind ? await o.fresh[kind]() : await generic!.fresh(o));
    case "Create": {
      const body = input.fields.find((f) => f.fieldKind === "message" && f.name !== "update_mask");
      if (!body) throw new Error(`${m.key}: no resource field in ${input.typeName}`);
      const resource = spec.create ? await spec.create(o, v1, denied) : example(m.service, o.caller);
      return setPath(input, { [body.jsonName]: resource }, resourceField, spec.parent(o));
    }
    case "Update": {
      const [bodyName] = resourceField.split(".");
      const body = input.fields.find((f) => f.name === bodyName);
      if (!body) throw new Error(`${m.key}: no field ${bodyName} in ${input.typeName}`);
      return setPath(input, { [body.jsonName]: spec.update(o, v1) }, resourceField, spec.existing(o));
    }
    default:
      throw new Error(`${m.key}: no case builder`);
  }
}

// ---------------------------------------------------------------------------
// The oracle.

type Expectation = { kind: "allow" } | { kind: "deny" } | { kind: "list"; nonEmpty: boolean };

function expectation(decl: Authorization, capabilities: ReadonlySet<string>, ownOrg: boolean): Expectation {
  const holds = capabilities.has(decl.capability);
  switch (decl.scope) {
    case Authorization_Scope.RESOURCE:
      return ownOrg && holds ? { kind: "allow" } : { kind: "deny" };
    case Authorization_Scope.LIST:
      return { kind: "list", nonEmpty: ownOrg && holds };
    case Authorization_Scope.ANY:
      return holds ? { kind: "allow" } : { kind: "deny" };
    case Authorization_Scope.ROOT:
      return { kind: "deny" };
    default:
      throw new Error(`unknown scope ${decl.scope} for ${decl.capability}`);
  }
}

const describeExpectation = (e: Expectation) => (e.kind === "list" ? `list (${e.nonEmpty ? "non-empty" : "empty"})` : e.kind);

/** One call's outcome, protocol-neutral: the google.rpc code (0 = OK), the ErrorInfo reason and, for Lists, the results. */
interface Outcome {
  code: number;
  reason: string | undefined;
  detail: string;
  results: JsonObject[];
}

/** Mismatch text, or undefined when the outcome meets the expectation. */
function judge(e: Expectation, out: Outcome): string | undefined {
  switch (e.kind) {
    case "allow":
      return out.code === Code.PermissionDenied || out.code === Code.Unauthenticated ? `refused: ${out.detail}` : undefined;
    case "deny":
      return out.code === Code.PermissionDenied ? undefined : `not refused: ${out.detail}`;
    case "list":
      if (out.code !== 0) return `list failed: ${out.detail}`;
      if (e.nonEmpty && out.results.length === 0) return "list is empty";
      if (!e.nonEmpty && out.results.length > 0) return `list shows ${out.results.map((r) => r["uid"] ?? r["id"]).join(", ")}`;
      return undefined;
  }
}

type Protocol = "grpc" | "rest";

async function invoke(protocol: Protocol, m: ApiMethod, request: JsonObject, token: string | undefined): Promise<Outcome> {
  if (!isUnary(m.method)) throw new Error(`${m.key} is not unary`);
  if (protocol === "grpc") {
    const out = await rpcCall(grpc, m.method, requestFromJson(m.method, request), token);
    return {
      code: out.code,
      reason: out.error?.findDetails(ErrorInfoSchema)[0]?.reason,
      detail: `code ${out.code} ${out.message}`,
      results: out.response ? listResults(m.method.output, out.response) : [],
    };
  }
  const binding = m.rest[0];
  if (!binding) throw new Error(`${m.key} has no REST binding`);
  const req = restRequestFor(m.method, binding, request);
  const res = await restCall(server.url, req, token);
  const body = res.json !== null && typeof res.json === "object" && !Array.isArray(res.json) ? res.json : {};
  const code = res.status === 200 ? 0 : typeof body["code"] === "number" ? body["code"] : -res.status;
  const details = res.status !== 200 && Array.isArray(body["details"]) ? (body["details"] as JsonObject[]) : [];
  const info = details.find((d) => d["@type"] === "type.googleapis.com/google.rpc.ErrorInfo");
  return {
    code,
    reason: info?.["reason"] as string | undefined,
    detail: `${req.httpMethod} ${req.path} → ${res.status} ${res.text.slice(0, 300)}`,
    results: res.status === 200 ? listResults(m.method.output, body) : [],
  };
}

// ---------------------------------------------------------------------------

const METHODS = apiMethods().filter((m) => isUnary(m.method));
const MATRIX_CONCURRENCY = 6;
/** protocol → role → method key → refused (PERMISSION_DENIED). */
const decisions: Record<Protocol, Map<string, Map<string, boolean>>> = { grpc: new Map(), rest: new Map() };
let otherOrg: Org;

beforeAll(async () => {
  server = await sharedServer();
  admin = restClient(server.url, server.token);
  grpc = createGrpcTransport({ baseUrl: server.url });
  const imported = await ok(
    admin("POST", "/vulnerabilities/v2beta1/advisories:import", {
      documents: [{ id: "CVE-2099-0001", modified: "2024-01-01T00:00:00Z", aliases: [] }],
    }),
  );
  advisoryUid = ((imported["results"] as JsonObject[])[0]!["uid"] as string) ?? "";
  const rootBindings = await ok(admin("GET", `/iam/v2beta1/rootRoleBindings?identity=${bootstrapIdentityUid(server.token)}&role=owner`));
  rootBindingUid = uidOf((rootBindings["rootRoleBindings"] as JsonObject[])[0]!);
  otherOrg = await makeOrg("elsewhere", builtIn("viewer"));
});

describe("the matrix covers the API", () => {
  it("every method of every API service has a case builder", () => {
    expect(METHODS.length).toBeGreaterThan(40);
    expect(
      apiMethods()
        .map(missingBuilder)
        .filter((why) => why !== undefined),
    ).toEqual([]);
  });

  it("the built-in roles hold the capabilities the catalog says", async () => {
    for (const role of ROLES.filter((r) => r.builtIn)) {
      const got = await ok(admin("GET", `/iam/v2beta1/roles/${role.name}`));
      // Answered as enum names (docs/design.md, "Capability names").
      expect(dottedCapabilities(got["capabilities"] as string[]).sort(), role.name).toEqual([...role.capabilities].sort());
    }
  });
});

const callerOrgs = new Map<string, Promise<{ own: Org; token: string }>>();

/**
 * The role's organization and a caller bound there with it, made once for both protocols: a
 * case works on new resources or on ones every case leaves in place, so the second protocol
 * finds the organization as the first did.
 */
function callerOrg(role: RoleUnderTest): Promise<{ own: Org; token: string }> {
  let made = callerOrgs.get(role.name);
  if (!made) {
    made = (async () => {
      const own = await makeOrg(`matrix-${role.name}`, role);
      const caller = uidOf(await createIdentity(admin, own.uid, { name: "caller" }));
      await ok(bind(admin, own.uid, caller, own.caller.uid));
      return { own, token: (await server.app.tokens.mint(caller, server.app.urls.baseUrl)).token };
    })();
    callerOrgs.set(role.name, made);
  }
  return made;
}

describe.each<Protocol>(["grpc", "rest"])("role × RPC over %s", (protocol) => {
  it.each(ROLES.map((r) => [r.name, r] as const))(
    "%s",
    async (_name, role) => {
      const { own, token } = await callerOrg(role);
      const capabilities = new Set(role.capabilities);
      // The other organization's requests hand out the caller's role too.
      const elsewhere: Org = { ...otherOrg, caller: own.caller };
      const refused = new Map<string, boolean>();
      decisions[protocol].set(role.name, refused);

      const mismatches: string[] = [];
      const check = async (m: ApiMethod, org: Org, ownOrg: boolean): Promise<void> => {
        const e = expectation(m.authorization!, capabilities, ownOrg);
        const request = await buildRequest(m, org, e.kind === "deny");
        const out = await invoke(protocol, m, request, token);
        if (ownOrg) refused.set(m.key, out.code === Code.PermissionDenied);
        const wrong = judge(e, out);
        if (wrong) {
          const cap = m.authorization!.capability;
          mismatches.push(
            `${role.name} ${m.key} (${cap}, ${ownOrg ? "own org" : "other org"}): expected ${describeExpectation(e)}, ${wrong} — request ${JSON.stringify(request)}`,
          );
        }
      };
      // A few methods at a time: each request works on its own fresh resources or only reads
      // what every case leaves in place, so the cases do not meet.
      const cases = METHODS.flatMap((m) => [() => check(m, own, true), () => check(m, elsewhere, false)]);
      await Promise.all(
        Array.from({ length: MATRIX_CONCURRENCY }, async () => {
          for (let c = cases.shift(); c; c = cases.shift()) await c();
        }),
      );
      expect(mismatches.sort()).toEqual([]);
    },
    180_000,
  );
});

describe("protocols agree", () => {
  it("every method refuses a missing or forged token with UNAUTHENTICATED over gRPC and REST alike", async () => {
    const forged = `${server.token.slice(0, -4)}AAAA`;
    const wrong: string[] = [];
    for (const m of METHODS) {
      const request = await buildRequest(m, otherOrg, true);
      for (const protocol of ["grpc", "rest"] as const) {
        for (const [label, token] of [
          ["no token", undefined],
          ["forged token", forged],
        ] as const) {
          const out = await invoke(protocol, m, request, token);
          if (out.code !== Code.Unauthenticated) wrong.push(`${m.key} over ${protocol} with ${label}: ${out.detail}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("gRPC and REST refuse exactly the same (role, method) pairs", () => {
    for (const role of ROLES) {
      const grpcDecisions = decisions.grpc.get(role.name);
      const restDecisions = decisions.rest.get(role.name);
      // A filtered run, or a role whose run stopped early (its own test reports why).
      if (grpcDecisions?.size !== METHODS.length || restDecisions?.size !== METHODS.length) continue;
      expect(Object.fromEntries(restDecisions), role.name).toEqual(Object.fromEntries(grpcDecisions));
    }
  });
});

// ---------------------------------------------------------------------------
// The complement: the grant ceiling. Requests that hand out a role (or
// capabilities, or who may assume an identity) are refused with
// PERMISSION_DENIED / GRANT_CEILING when they would grant more than the
// caller holds at the target group, and pass when they stay within it. The
// caller holds every capability these writes need, but not e.g. repo.delete.

const GRANTER: RoleUnderTest = {
  name: "granter",
  builtIn: false,
  capabilities: [
    "groups.list",
    "identity.list",
    "identity.update",
    "roles.list",
    "roles.create",
    "roles.update",
    "role_bindings.list",
    "role_bindings.create",
    "role_bindings.update",
    "group_invites.list",
    "group_invites.create",
    "identity_providers.list",
    "identity_providers.create",
    "identity_providers.update",
  ],
};

/** What a request hands out: a role, a set of capabilities, and the identity whose claimMatch it changes. */
interface Grant {
  role: string;
  capabilities: string[];
  identity: string;
}

const IAM2 = "platform.iam.v2beta1";
const IAM1 = "platform.iam.v1";
const claimMatch = () => ({ issuer: "https://issuer.invalid", subject: `s-${n()}` });

const CEILING_CASES: Record<string, (o: Org, g: Grant) => Promise<JsonObject>> = {
  [`${IAM2}.RoleBindingsService/CreateRoleBinding`]: async (o, g) => ({
    parent: o.uid,
    identityUid: await o.fresh.identity(),
    roleUid: g.role,
  }),
  [`${IAM2}.RoleBindingsService/BatchCreateRoleBindings`]: async (o, g) => ({
    parent: o.uid,
    requests: [{ parent: o.uid, identityUid: await o.fresh.identity(), roleUid: g.role }],
  }),
  [`${IAM2}.RoleBindingsService/UpdateRoleBinding`]: async (o, g) => ({ roleBinding: { uid: o.binding, roleUid: g.role } }),
  [`${IAM2}.GroupInvitesService/CreateGroupInvite`]: async (o, g) => ({ parent: o.uid, groupInvite: { roleUid: g.role, ttl: "3600s" } }),
  [`${IAM2}.IdentityProvidersService/CreateIdentityProvider`]: async (o, g) => ({
    parent: o.uid,
    identityProvider: { name: `sso-${n()}`, defaultRole: g.role, oidc: OIDC },
  }),
  [`${IAM2}.IdentityProvidersService/UpdateIdentityProvider`]: async (o, g) => ({ identityProvider: { uid: o.idp, defaultRole: g.role } }),
  [`${IAM2}.RolesService/CreateRole`]: async (o, g) => ({ parent: o.uid, role: { name: `role-${n()}`, capabilities: g.capabilities } }),
  [`${IAM2}.RolesService/UpdateRole`]: async (o, g) => ({ role: { uid: o.role, capabilities: g.capabilities } }),
  [`${IAM2}.IdentitiesService/UpdateIdentity`]: async (_o, g) => ({ identity: { uid: g.identity, claimMatch: claimMatch() } }),
  [`${IAM1}.RoleBindingsService/CreateRoleBinding`]: async (o, g) => ({
    parent: o.uid,
    roleBinding: { identity: await o.fresh.identity(), role: g.role },
  }),
  [`${IAM1}.RoleBindingsService/UpdateRoleBinding`]: async (o, g) => ({
    roleBinding: { id: o.binding, identity: o.identity, role: g.role },
  }),
  [`${IAM1}.RolesService/CreateRole`]: async (o, g) => ({ parent: o.uid, role: { name: `role-${n()}`, capabilities: g.capabilities } }),
  [`${IAM1}.RolesService/UpdateRole`]: async (o, g) => ({ role: { id: o.role, name: `spare-${n()}`, capabilities: g.capabilities } }),
  [`${IAM1}.IdentitiesService/UpdateIdentity`]: async (_o, g) => ({
    identity: { id: g.identity, name: `who-${n()}`, claimMatch: claimMatch() },
  }),
};

/** Request fields that name a role or capabilities to hand out. */
const GRANTING_FIELDS = new Set(["role_uid", "default_role", "capabilities", "role"]);

/**
 * Whether a request can hand something out: a role-naming string field anywhere in it, or (Updates) a claim_match.
 * Root-scope methods are out of an organization-level granter's reach (the matrix shows they are refused);
 * their ceiling at the root is tested in root-role-bindings.spec.ts.
 */
function handsOut(m: ApiMethod): boolean {
  if (!m.authorization || m.authorization.capability.endsWith(".list")) return false;
  if (m.authorization.scope === Authorization_Scope.ROOT) return false;
  const update = standardMethodOf(m.method) === "Update";
  const walk = (desc: DescMessage, depth: number): boolean =>
    depth < 4 &&
    desc.fields.some((f) => {
      if (GRANTING_FIELDS.has(f.name) && (f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar"))) return true;
      if (update && f.name === "claim_match") return true;
      return f.fieldKind === "message" && !f.message.typeName.startsWith("google.")
        ? walk(f.message, depth + 1)
        : f.fieldKind === "list" && f.listKind === "message"
          ? walk(f.message, depth + 1)
          : false;
    });
  return walk(m.method.input, 0);
}

describe("grant ceiling (the complement of the matrix)", () => {
  it("every write that can hand out a role, capabilities or an identity has a ceiling case", () => {
    const granting = METHODS.filter(handsOut)
      .map((m) => m.key)
      .sort();
    expect(granting).toEqual(Object.keys(CEILING_CASES).sort());
  });

  it.each<Protocol>(["grpc", "rest"])(
    "over %s: beyond the ceiling is GRANT_CEILING, within it passes",
    async (protocol) => {
      const o = await makeOrg(`ceiling-${protocol}`, GRANTER);
      const caller = uidOf(await createIdentity(admin, o.uid, { name: "granter" }));
      await ok(bind(admin, o.uid, caller, o.caller.uid));
      const ownerBound = await o.fresh.identity();
      await ok(bind(admin, o.uid, ownerBound, "owner"));
      const token = (await server.app.tokens.mint(caller, server.app.urls.baseUrl)).token;
      const beyond: Grant = { role: "owner", capabilities: ["repo.delete"], identity: ownerBound };
      const within: Grant = { role: o.caller.uid, capabilities: ["groups.list"], identity: o.identity };

      const mismatches: string[] = [];
      for (const [key, build] of Object.entries(CEILING_CASES)) {
        const m = METHODS.find((x) => x.key === key);
        if (!m) {
          mismatches.push(`${key}: no such method`);
          continue;
        }
        const refused = await build(o, beyond);
        const out = await invoke(protocol, m, refused, token);
        if (out.code !== Code.PermissionDenied || out.reason !== "GRANT_CEILING") {
          mismatches.push(
            `${key} beyond the ceiling: expected PERMISSION_DENIED/GRANT_CEILING, got ${out.detail} (reason ${out.reason}) — request ${JSON.stringify(refused)}`,
          );
        }
        const allowed = await build(o, within);
        const passed = await invoke(protocol, m, allowed, token);
        if (passed.code !== 0)
          mismatches.push(`${key} within the ceiling: expected OK, got ${passed.detail} — request ${JSON.stringify(allowed)}`);
      }
      expect(mismatches).toEqual([]);
    },
    60_000,
  );
});
