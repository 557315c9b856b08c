import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { file_google_api_annotations, http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema, type HttpRule } from "../../gen/google/api/http_pb.js";
import { GroupsService as GroupsServiceV1 } from "../../gen/platform/iam/v1/groups_pb.js";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { ThingService } from "../../gen/resttest/v1/kitchen_sink_pb.js";
import { buildOpenApiDocument } from "./openapi.js";

// Path templates and operation ids of the document (docs/design.md, "The
// OpenAPI document's paths and operation ids"); the served document is
// checked against the validator in test/e2e/openapi.spec.ts.

type Operations = Record<string, Record<string, { operationId: string; parameters: { name: string; in: string; description?: string }[] }>>;

function pathsOf(...services: Parameters<typeof buildOpenApiDocument>[0]["services"]): Operations {
  return buildOpenApiDocument({ services, version: "0" })["paths"] as unknown as Operations;
}

function ids(paths: Operations): string[] {
  return Object.entries(paths).flatMap(([path, item]) => Object.entries(item).map(([m, op]) => `${m} ${path} ${op.operationId}`));
}

describe("buildOpenApiDocument", () => {
  it("writes one template per path shape, its parameter named as the Get names it", () => {
    const paths = pathsOf(GroupsService);
    expect(Object.keys(paths).sort()).toEqual(["/iam/v2beta1/groups", "/iam/v2beta1/groups/{uid}"]);
    const item = paths["/iam/v2beta1/groups/{uid}"] ?? {};
    for (const [method, field] of [
      ["get", "uid"],
      ["post", "parent"],
      ["patch", "group.uid"],
      ["delete", "uid"],
    ] as const) {
      const param = item[method]?.parameters.find((p) => p.in === "path");
      expect(param?.name, method).toBe("uid");
      expect(param?.description, method).toContain(`Sets the request's \`${field}\`.`);
    }
  });

  it("falls back to the Delete's name when there is no Get, and keeps a custom verb's path apart", () => {
    const v1 = pathsOf(GroupsServiceV1);
    expect(Object.keys(v1).sort()).toEqual(["/iam/v1/groups", "/iam/v1/groups/{id}"]);
    const things = pathsOf(ThingService);
    expect(Object.keys(things)).toEqual(
      expect.arrayContaining(["/v1/{thing.name}", "/v1/{parent}:batchCreate", "/v1/things/{name}:archive"]),
    );
  });

  it("names operations after the RPC, prefixing an older version's and suffixing additional bindings", () => {
    expect(ids(pathsOf(GroupsService, GroupsServiceV1)).sort()).toEqual(
      [
        "get /iam/v2beta1/groups ListGroups",
        "post /iam/v2beta1/groups CreateGroupWithoutParent",
        "get /iam/v2beta1/groups/{uid} GetGroup",
        "post /iam/v2beta1/groups/{uid} CreateGroup",
        "patch /iam/v2beta1/groups/{uid} UpdateGroup",
        "delete /iam/v2beta1/groups/{uid} DeleteGroup",
        "get /iam/v1/groups v1_ListGroups",
        "post /iam/v1/groups v1_CreateGroupWithoutParent",
        "post /iam/v1/groups/{id} v1_CreateGroup",
        "put /iam/v1/groups/{id} v1_UpdateGroup",
        "patch /iam/v1/groups/{id} v1_UpdateGroupViaPatch",
        "delete /iam/v1/groups/{id} v1_DeleteGroup",
      ].sort(),
    );
    // Alone, v1 has nobody to give way to: plain RPC names.
    expect(ids(pathsOf(GroupsServiceV1))).toContain("put /iam/v1/groups/{id} UpdateGroup");
  });

  it("names an additional binding by what differs: another field in the path, a verb, or only literals", () => {
    const rule = (method: "get" | "post", path: string): HttpRule => create(HttpRuleSchema, { pattern: { case: method, value: path } });
    const service = serviceWithBindings(rule("get", "/v9/things/{name}"), [
      rule("get", "/v9/owners/{owner}/things/{name}"),
      rule("post", "/v9/things/{name}:touch"),
      rule("get", "/v9/items/{name}"),
    ]);
    expect(ids(pathsOf(service)).sort()).toEqual(
      [
        "get /v9/things/{name} Get",
        "get /v9/owners/{owner}/things/{name} GetWithOwner",
        "post /v9/things/{name}:touch GetViaPostAsTouch",
        "get /v9/items/{name} GetAtV9Items",
      ].sort(),
    );
  });

  it("refuses to build a document where two operations would share an id", () => {
    const rule = (path: string): HttpRule => create(HttpRuleSchema, { pattern: { case: "get", value: path } });
    // One package, one version: no prefix can tell the two Gets apart.
    expect(() => pathsOf(serviceWithBindings(rule("/v9/a/{name}"), []), serviceWithBindings(rule("/v9/b/{name}"), [], "Other"))).toThrow(
      /operation id Get of GET \/v9\/b\/\{name\} is taken by \/v9\/a\/\{name\}/,
    );
  });
});

/** A one-method service `odd.v9.<serviceName>/Get(Req)` (fields `name`, `owner`) with a main rule and additional bindings. */
function serviceWithBindings(main: HttpRule, additional: HttpRule[], serviceName = "Odd"): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, { ...main, additionalBindings: additional }));
  const field = (name: string, number: number) => ({
    name,
    number,
    type: FieldDescriptorProto_Type.STRING,
    jsonName: name,
    label: FieldDescriptorProto_Label.OPTIONAL,
  });
  const file = create(FileDescriptorProtoSchema, {
    name: `${serviceName}.proto`,
    package: "odd.v9",
    syntax: "proto3",
    dependency: ["google/api/annotations.proto"],
    messageType: [{ name: "Req", field: [field("name", 1), field("owner", 2)] }],
    service: [{ name: serviceName, method: [{ name: "Get", inputType: ".odd.v9.Req", outputType: ".odd.v9.Req", options }] }],
  });
  const registry = createFileRegistry(file, (name) =>
    name === file_google_api_annotations.proto.name ? file_google_api_annotations : undefined,
  );
  const service = registry.getService(`odd.v9.${serviceName}`);
  if (service === undefined) throw new Error(`odd.v9.${serviceName} not built`);
  return service;
}
