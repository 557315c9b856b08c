import { describe, expect, it } from "vitest";
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
});
