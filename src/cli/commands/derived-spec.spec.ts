import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { PassThrough, Writable } from "node:stream";
import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label as Label,
  FieldDescriptorProto_Type as Type,
  FieldOptionsSchema,
  file_google_protobuf_duration,
  file_google_protobuf_empty,
  file_google_protobuf_field_mask,
  file_google_protobuf_timestamp,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
  type FieldDescriptorProto,
} from "@bufbuild/protobuf/wkt";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "../../../gen/google/api/annotations_pb.js";
import { FieldBehavior, field_behavior } from "../../../gen/google/api/field_behavior_pb.js";
import { HttpRuleSchema } from "../../../gen/google/api/http_pb.js";
import { file_platform_common_v1_uidp } from "../../../gen/platform/common/v1/uidp_pb.js";
import { AccountAssociationsService } from "../../../gen/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../../gen/platform/iam/v2beta1/identities_pb.js";
import { IdentityProvidersService } from "../../../gen/platform/iam/v2beta1/identity_providers_pb.js";
import { RoleBindingsService } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService } from "../../../gen/platform/iam/v2beta1/roles_pb.js";
import { RootRoleBindingsService } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { ReposService } from "../../../gen/platform/registry/v2beta1/repos_pb.js";
import { TagsService } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import { AdvisoriesService } from "../../../gen/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { buildProgram } from "../program.js";
import { OVERRIDES, registerResources, RESOURCE_SERVICES, resourceSpec } from "./api-resources.js";
import { deriveResourceSpec, singular, withOverride } from "./derived-spec.js";
import type { FieldFlag, ResourceSpec } from "./resource.js";

/** What the help shows of a flag: name, body path, kind, required. */
const flags = (fields: FieldFlag[] | undefined) =>
  (fields ?? []).map((f) => `--${f.flag}=${f.path}:${f.kind ?? "string"}${f.required ? "!" : ""}`);
const filters = (spec: ResourceSpec) => (spec.list.filters ?? []).map((f) => `--${f.flag}=${f.param}${f.kind === "bool" ? ":bool" : ""}`);

describe("deriveResourceSpec of the API's services", () => {
  it("tags: path, list key, filters, required digest, bool deprecated, parent from the create path", () => {
    const spec = deriveResourceSpec(TagsService);
    expect(spec).toMatchObject({
      command: "tags",
      kind: "tag",
      path: "/registry/v2beta1/tags",
      listKey: "tags",
      update: true,
      delete: true,
    });
    expect(spec.list).toMatchObject({ scopes: "all", name: true });
    expect(filters(spec)).toEqual(["--digest=digest", "--updated-since=updated_since"]);
    expect(flags(spec.fields)).toEqual(["--digest=digest:string!", "--deprecated=deprecated:bool"]);
    expect(spec.create).toMatchObject({ parent: { flag: "parent", required: true }, name: "required" });
    expect(spec.columns.map((c) => c.header)).toEqual(["UID", "NAME", "CREATED"]);
  });

  it("repos and groups: lists and maps; OUTPUT_ONLY fields (activeTags, verified) get no flag; an optional parent", () => {
    expect(flags(deriveResourceSpec(ReposService).fields)).toEqual(["--description=description:string", "--alias=aliases:list"]);
    const groups = deriveResourceSpec(GroupsService);
    expect(flags(groups.fields)).toEqual(["--description=description:string", "--resource-limit=resourceLimits:int-map"]);
    expect(groups.create?.parent).toMatchObject({ flag: "parent", required: false });
    expect(deriveResourceSpec(RolesService).fields.map((f) => f.flag)).toEqual(["description", "capability"]);
  });

  it("identities: nested fields as --<field> with dotted paths; nested request fields are not filters", () => {
    const spec = deriveResourceSpec(IdentitiesService);
    expect(flags(spec.fields)).toEqual([
      "--description=description:string",
      // Each pair of claimMatch is a oneof, declared together.
      "--issuer=claimMatch.issuer:string",
      "--issuer-pattern=claimMatch.issuerPattern:string",
      "--subject=claimMatch.subject:string",
      "--subject-pattern=claimMatch.subjectPattern:string",
      "--audience=claimMatch.audience:string",
      "--audience-pattern=claimMatch.audiencePattern:string",
    ]);
    expect(filters(spec)).toEqual([]);
  });

  it("role bindings: create's body is the request (identity only on create), update's the binding (INPUT_ONLY roleUid)", () => {
    const spec = deriveResourceSpec(RoleBindingsService);
    expect(spec).toMatchObject({
      command: "role-bindings",
      kind: "role binding",
      path: "/iam/v2beta1/roleBindings",
      listKey: "roleBindings",
      update: true,
    });
    expect(spec.list).toMatchObject({ scopes: "all", name: false });
    expect(filters(spec)).toEqual(["--identity=identity", "--group=group", "--role=role"]);
    expect(flags(spec.create?.only)).toEqual(["--identity-uid=identityUid:string!"]);
    expect(flags(spec.fields)).toEqual(["--role-uid=roleUid:string!"]);
    expect(spec.fields[0]!.arg).toBe("<uid>");
  });

  it("root role bindings: no uidp (no scopes), no parent, no update; its own kind although it shares RoleBinding", () => {
    const spec = deriveResourceSpec(RootRoleBindingsService);
    expect(spec).toMatchObject({
      command: "root-role-bindings",
      kind: "root role binding",
      listKey: "rootRoleBindings",
      update: false,
      delete: true,
    });
    expect(spec.list).toMatchObject({ scopes: "none", name: false });
    expect(spec.create?.parent).toBeUndefined();
    expect(flags(spec.fields)).toEqual(["--identity-uid=identityUid:string!", "--role-uid=roleUid:string!"]);
  });

  it("identity providers: an INPUT_ONLY secret is writable; fields of a required sub-message are required", () => {
    expect(flags(deriveResourceSpec(IdentityProvidersService).fields)).toEqual([
      "--description=description:string",
      "--default-role=defaultRole:string",
      "--issuer=oidc.issuer:string!",
      "--client-id=oidc.clientId:string!",
      "--client-secret=oidc.clientSecret:string",
      "--additional-scope=oidc.additionalScopes:list",
    ]);
  });

  it("account associations: map<string,string>, repeated int64; required fields of optional sub-messages are not; an optional name", () => {
    const spec = deriveResourceSpec(AccountAssociationsService);
    expect(flags(spec.fields)).toEqual([
      "--description=description:string",
      "--account=amazon.account:string",
      "--project-id=google.projectId:string",
      "--project-number=google.projectNumber:string",
      "--tenant-id=azure.tenantId:string",
      "--client-id=azure.clientIds:map",
      "--installation=github.installations:int-list",
    ]);
    expect(spec.create?.name).toBe("optional");
  });

  it("group invites: Duration, no name, no update; OUTPUT_ONLY role and code get no flag", () => {
    const spec = deriveResourceSpec(GroupInvitesService);
    expect(spec).toMatchObject({
      command: "group-invites",
      kind: "group invite",
      path: "/iam/v2beta1/groupInvites",
      update: false,
      delete: true,
    });
    expect(spec.create?.name).toBeUndefined();
    expect(flags(spec.fields)).toEqual([
      "--role-uid=roleUid:string!",
      "--email=email:string",
      "--ttl=ttl:duration!",
      "--single-use=singleUse:bool",
    ]);
    expect(spec.columns.map((c) => c.header)).toEqual(["UID", "CREATED"]);
  });

  it("advisories: list and get only; a bool filter", () => {
    const spec = deriveResourceSpec(AdvisoriesService);
    expect(spec).toMatchObject({
      command: "advisories",
      kind: "advisory",
      listKey: "advisories",
      fields: [],
      update: false,
      delete: false,
    });
    expect(spec.create).toBeUndefined();
    expect(filters(spec)).toEqual([
      "--advisory-id=advisory_id",
      "--alias=alias",
      "--artifact-name=artifact_name",
      "--component-name=component_name",
      "--show-deleted=show_deleted:bool",
    ]);
  });

  it("every override applies to what the derivation gives (none is stale)", () => {
    for (const service of RESOURCE_SERVICES) expect(() => resourceSpec(service), service.typeName).not.toThrow();
    // Every override belongs to a resource service; a service needs none (a new one gets the derived commands).
    const services = new Set(RESOURCE_SERVICES.map((s) => s.typeName));
    for (const name of Object.keys(OVERRIDES)) expect(services.has(name), name).toBe(true);
  });

  it("an override naming a field or filter the protos do not give is an error", () => {
    const tags = deriveResourceSpec(TagsService);
    expect(() => withOverride(tags, { fields: { digests: { flag: "d" } } })).toThrow(
      "tags: the override names digests, which the protos no longer give",
    );
    expect(() => withOverride(tags, { filters: { since: {} } })).toThrow(/names since/);
    expect(() => withOverride(deriveResourceSpec(AdvisoriesService), { parent: { flag: "group" } })).toThrow(/does not have/);
  });

  it("singular", () => {
    expect(["identities", "aliases", "repos", "tags", "statuses", "boxes", "advisories", "licenses", "class"].map(singular)).toEqual([
      "identity",
      "alias",
      "repo",
      "tag",
      "status",
      "box",
      "advisory",
      "license",
      "class",
    ]);
  });
});

// A resource the CLI has never heard of: `shop.v1.WidgetsService`, built here as a
// descriptor with the same kinds of annotations as the API's protos.
function widgetsService(): DescService {
  const behavior = (...b: FieldBehavior[]) => {
    const options = create(FieldOptionsSchema);
    setExtension(options, field_behavior, b);
    return options;
  };
  const field = (name: string, number: number, type: Type, more: Partial<FieldDescriptorProto> = {}) =>
    ({
      name,
      number,
      type,
      label: Label.OPTIONAL,
      jsonName: name.replace(/_(\w)/g, (_, c: string) => c.toUpperCase()),
      ...more,
    }) as FieldDescriptorProto;
  const msg = (typeName: string, more: Partial<FieldDescriptorProto> = {}) => ({ type: Type.MESSAGE, typeName, ...more });
  const rule = (verb: "get" | "post" | "patch" | "delete", path: string, body = "") => {
    const options = create(MethodOptionsSchema);
    setExtension(options, http, create(HttpRuleSchema, { pattern: { case: verb, value: path }, body }));
    return options;
  };
  const method = (name: string, input: string, output: string, options: ReturnType<typeof rule>) => ({
    name,
    inputType: `.shop.v1.${input}`,
    outputType: output.startsWith(".") ? output : `.shop.v1.${output}`,
    options,
  });
  const file = create(FileDescriptorProtoSchema, {
    name: "shop/v1/widgets.proto",
    package: "shop.v1",
    syntax: "proto3",
    dependency: [
      "google/protobuf/duration.proto",
      "google/protobuf/empty.proto",
      "google/protobuf/field_mask.proto",
      "google/protobuf/timestamp.proto",
      "platform/common/v1/uidp.proto",
    ],
    messageType: [
      {
        name: "Widget",
        field: [
          field("uid", 1, Type.STRING, { options: behavior(FieldBehavior.IDENTIFIER) }),
          field("name", 2, Type.STRING, { options: behavior(FieldBehavior.REQUIRED) }),
          field("color", 3, Type.STRING),
          field("sizes", 4, Type.INT64, { label: Label.REPEATED }),
          field("labels", 5, Type.MESSAGE, { label: Label.REPEATED, typeName: ".shop.v1.Widget.LabelsEntry" }),
          field("hidden", 6, Type.BOOL),
          field("lifetime", 7, Type.MESSAGE, msg(".google.protobuf.Duration")),
          field("spec", 8, Type.MESSAGE, msg(".shop.v1.Spec")),
          field("secret", 9, Type.STRING, { options: behavior(FieldBehavior.INPUT_ONLY) }),
          field("create_time", 10, Type.MESSAGE, { ...msg(".google.protobuf.Timestamp"), options: behavior(FieldBehavior.OUTPUT_ONLY) }),
        ],
        nestedType: [
          { name: "LabelsEntry", field: [field("key", 1, Type.STRING), field("value", 2, Type.STRING)], options: { mapEntry: true } },
        ],
      },
      // `color` clashes with Widget.color: its flag becomes --spec-color; `depth` keeps its own name.
      { name: "Spec", field: [field("color", 1, Type.STRING), field("depth", 2, Type.INT32)] },
      {
        name: "ListWidgetsRequest",
        field: [
          field("uidp", 1, Type.MESSAGE, msg(".platform.common.v1.UIDPFilter")),
          field("name", 2, Type.STRING),
          field("page_size", 3, Type.INT32),
          field("page_token", 4, Type.STRING),
          field("order_by", 5, Type.STRING),
          field("skip", 6, Type.INT32),
          field("color", 7, Type.STRING),
          field("in_stock", 8, Type.BOOL),
        ],
      },
      {
        name: "ListWidgetsResponse",
        field: [
          field("widgets", 1, Type.MESSAGE, { label: Label.REPEATED, typeName: ".shop.v1.Widget" }),
          field("next_page_token", 2, Type.STRING),
        ],
      },
      { name: "GetWidgetRequest", field: [field("uid", 1, Type.STRING)] },
      {
        name: "CreateWidgetRequest",
        field: [
          field("parent", 1, Type.STRING, { options: behavior(FieldBehavior.REQUIRED) }),
          field("widget", 2, Type.MESSAGE, msg(".shop.v1.Widget")),
        ],
      },
      {
        name: "UpdateWidgetRequest",
        field: [
          field("widget", 1, Type.MESSAGE, msg(".shop.v1.Widget")),
          field("update_mask", 2, Type.MESSAGE, msg(".google.protobuf.FieldMask")),
        ],
      },
      { name: "DeleteWidgetRequest", field: [field("uid", 1, Type.STRING)] },
    ],
    service: [
      {
        name: "WidgetsService",
        method: [
          method("ListWidgets", "ListWidgetsRequest", "ListWidgetsResponse", rule("get", "/shop/v1/widgets")),
          method("GetWidget", "GetWidgetRequest", "Widget", rule("get", "/shop/v1/widgets/{uid=**}")),
          method("CreateWidget", "CreateWidgetRequest", "Widget", rule("post", "/shop/v1/widgets/{parent=**}", "widget")),
          method("UpdateWidget", "UpdateWidgetRequest", "Widget", rule("patch", "/shop/v1/widgets/{widget.uid=**}", "widget")),
          method("DeleteWidget", "DeleteWidgetRequest", ".google.protobuf.Empty", rule("delete", "/shop/v1/widgets/{uid=**}")),
        ],
      },
    ],
  });
  const deps = [
    file_google_protobuf_duration,
    file_google_protobuf_empty,
    file_google_protobuf_field_mask,
    file_google_protobuf_timestamp,
    file_platform_common_v1_uidp,
  ];
  const registry = createFileRegistry(file, (name) => deps.find((d) => d.proto.name === name));
  return registry.getService("shop.v1.WidgetsService")!;
}

describe("a resource with no override entry", () => {
  const WIDGET = { uid: "g1/w1", name: "w1", color: "red", createTime: "2026-01-02T03:04:05.678Z" };
  const requests: { method: string; url: string; body: unknown }[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      requests.push({ method: req.method!, url: req.url!, body: body ? JSON.parse(body) : undefined });
      res.setHeader("content-type", "application/json");
      const answer =
        req.method === "DELETE"
          ? {}
          : req.method === "GET" && req.url!.startsWith("/shop/v1/widgets?")
            ? { widgets: [WIDGET], nextPageToken: "" }
            : WIDGET;
      res.end(JSON.stringify(answer));
    });
  });
  let api: string;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  /** `platformctl …args` with the widgets registered as any new service would be. */
  async function run(args: string[]): Promise<{ stdout: string; stderr: string }> {
    let stdout = "";
    let stderr = "";
    const sink = (add: (t: string) => void) => new Writable({ write: (c: Buffer, _e, cb) => (add(c.toString()), cb()) });
    const io = {
      env: { PLATFORM_TOKEN: "t", PLATFORM_CONFIG_DIR: "/nonexistent" },
      stdin: new PassThrough(),
      stdout: sink((t) => (stdout += t)),
      stderr: sink((t) => (stderr += t)),
    };
    const program = buildProgram(io);
    registerResources(program, io, [widgetsService()], {});
    try {
      await program.parseAsync(["--api", api, ...args], { from: "user" });
    } catch (e) {
      // --help ends through exitOverride; anything else is a failure of the test.
      if ((e as { code?: string }).code !== "commander.helpDisplayed") throw e;
    }
    return { stdout, stderr };
  }

  it("gets list/get/create/update/delete with flags from the fields' types", async () => {
    const area = (await run(["shop", "--help"])).stdout;
    expect(area).toContain("widgets: /shop/v1/widgets");
    const group = (await run(["shop", "widgets", "--help"])).stdout;
    for (const sub of ["list", "get <uid>", "create [options] <name>", "update [options] <uid>", "delete <uid>"])
      expect(group).toContain(sub);
    expect(group).toContain("create a widget");
    const create = (await run(["shop", "widgets", "create", "--help"])).stdout.replace(/\s+/g, " ");
    for (const flag of [
      "--parent <uid>",
      "--color <value>",
      "--size <n> sets sizes (repeatable)",
      "--label <key=value>",
      "--hidden",
      "--lifetime <duration>",
      "--spec-color <value> sets spec.color",
      "--depth <value> sets spec.depth",
      "--secret <value>",
    ]) {
      expect(create).toContain(flag);
    }
    expect(create).not.toMatch(/--create-time|--uid|--name/);
    const update = (await run(["shop", "widgets", "update", "--help"])).stdout;
    expect(update).toMatch(/--name <value>/);
    expect(update).toMatch(/--no-hidden/);
    const list = (await run(["shop", "widgets", "list", "--help"])).stdout;
    for (const flag of ["--name <name>", "--children-of <uid>", "--id <uid>", "--color <value>", "--in-stock "])
      expect(list).toContain(flag);
  });

  it("sends each command to the REST route, with the body the flags describe", async () => {
    requests.length = 0;
    const created = await run([
      "shop",
      "widgets",
      "create",
      "w1",
      "--parent",
      "g1",
      "--color",
      "red",
      "--spec-color",
      "blue",
      "--depth",
      "3",
      "--size",
      "1",
      "--size",
      "2",
      "--label",
      "a=b",
      "--hidden",
      "--lifetime",
      "1h",
      "--secret",
      "s",
    ]);
    expect(created.stdout).toBe("UID    NAME  CREATED\ng1/w1  w1    2026-01-02T03:04:05Z\n");
    await run(["shop", "widgets", "list", "--color", "red", "--in-stock"]);
    await run(["shop", "widgets", "get", "g1/w1"]);
    await run(["shop", "widgets", "update", "g1/w1", "--no-hidden", "--depth", "4"]);
    expect((await run(["shop", "widgets", "delete", "g1/w1"])).stdout).toBe("deleted widget g1/w1\n");
    expect(requests).toEqual([
      {
        method: "POST",
        url: "/shop/v1/widgets/g1",
        body: {
          name: "w1",
          color: "red",
          sizes: ["1", "2"],
          labels: { a: "b" },
          hidden: true,
          lifetime: "3600s",
          spec: { color: "blue", depth: "3" },
          secret: "s",
        },
      },
      { method: "GET", url: "/shop/v1/widgets?color=red&in_stock=true", body: undefined },
      { method: "GET", url: "/shop/v1/widgets/g1/w1", body: undefined },
      { method: "PATCH", url: "/shop/v1/widgets/g1/w1", body: { hidden: false, spec: { depth: "4" } } },
      { method: "DELETE", url: "/shop/v1/widgets/g1/w1", body: undefined },
    ]);
  });
});
