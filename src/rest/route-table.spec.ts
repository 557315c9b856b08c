import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
} from "@bufbuild/protobuf/wkt";
import { file_google_api_annotations, http } from "../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema } from "../../gen/google/api/http_pb.js";
import { describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { RouteTable, type RouteMatch } from "./route-table.js";
import { ThingService } from "../../gen/resttest/v1/kitchen_sink_pb.js";

function routeOf(m: RouteMatch): { rpc: string; vars: Record<string, string | undefined> } {
  if (m.kind !== "found") throw new Error(`expected a route, got ${m.kind}`);
  const vars: Record<string, string | undefined> = {};
  for (const c of m.captures) vars[c.variable.fieldPath.join(".")] = c.value;
  return { rpc: m.route.method.name, vars };
}

describe("RouteTable", () => {
  const table = new RouteTable([GroupsService, ThingService], "localhost");

  it("builds one route per rule and additional binding of every unary method", () => {
    const names = table.routes.map((r) => `${r.httpMethod} ${r.template.source}`);
    expect(names).toEqual(
      expect.arrayContaining([
        "GET /iam/v2beta1/groups",
        "GET /iam/v2beta1/groups/{uid=**}",
        "POST /iam/v2beta1/groups/{parent=**}",
        "POST /iam/v2beta1/groups",
        "PATCH /iam/v2beta1/groups/{group.uid=**}",
        "DELETE /iam/v2beta1/groups/{uid=**}",
        "GET /v1/things/{name=**}",
        "GET /v1/issuers/{claim_match.issuer}/things/{name}",
        "POST /v1/{parent=**}:batchCreate",
      ]),
    );
  });

  it("skips streaming methods even when they carry a rule", () => {
    expect(table.routes.some((r) => r.method.name === "WatchThings")).toBe(false);
    expect(table.match("GET", "/v1/things:watch").kind).not.toBe("found");
  });

  it("routes the group paths as the protos say", () => {
    expect(routeOf(table.match("GET", "/iam/v2beta1/groups"))).toEqual({ rpc: "ListGroups", vars: {} });
    expect(routeOf(table.match("GET", "/iam/v2beta1/groups/abc/def"))).toEqual({ rpc: "GetGroup", vars: { uid: "abc/def" } });
    expect(routeOf(table.match("POST", "/iam/v2beta1/groups"))).toEqual({ rpc: "CreateGroup", vars: {} });
    expect(routeOf(table.match("POST", "/iam/v2beta1/groups/p/q"))).toEqual({ rpc: "CreateGroup", vars: { parent: "p/q" } });
    expect(routeOf(table.match("PATCH", "/iam/v2beta1/groups/a"))).toEqual({ rpc: "UpdateGroup", vars: { "group.uid": "a" } });
  });

  it("routes custom verbs and nested path fields", () => {
    expect(routeOf(table.match("POST", "/v1/orgs/o1/teams/t1:batchCreate"))).toEqual({
      rpc: "BatchCreateThings",
      vars: { parent: "orgs/o1/teams/t1" },
    });
    expect(routeOf(table.match("GET", "/v1/issuers/acme/things/t1"))).toEqual({
      rpc: "GetThing",
      vars: { "claim_match.issuer": "acme", name: "t1" },
    });
  });

  it("reads %2F as / inside a ** capture, the route being the one the literal path has", () => {
    expect(routeOf(table.match("GET", "/iam/v2beta1/groups/abc%2Fdef"))).toEqual({ rpc: "GetGroup", vars: { uid: "abc/def" } });
    expect(routeOf(table.match("GET", "/iam/v2beta1/groups/a%2fb/c%2Fd"))).toEqual({ rpc: "GetGroup", vars: { uid: "a/b/c/d" } });
    expect(routeOf(table.match("POST", "/iam/v2beta1/groups/p%2Fq"))).toEqual({ rpc: "CreateGroup", vars: { parent: "p/q" } });
    expect(routeOf(table.match("PATCH", "/iam/v2beta1/groups/a%2Fb"))).toEqual({ rpc: "UpdateGroup", vars: { "group.uid": "a/b" } });
    expect(routeOf(table.match("POST", "/v1/orgs%2Fo1%2Fteams:batchCreate"))).toEqual({
      rpc: "BatchCreateThings",
      vars: { parent: "orgs/o1/teams" },
    });
    // A literal's text after %2F is still just part of the uid, as it is in the plain path.
    expect(routeOf(table.match("GET", "/iam/v2beta1/groups/x%2Fgroups"))).toEqual(
      routeOf(table.match("GET", "/iam/v2beta1/groups/x/groups")),
    );
    // An escaped "%" is not a slash: the uid keeps the text, and its check refuses it.
    expect(routeOf(table.match("GET", "/iam/v2beta1/groups/a%252Fb"))).toEqual({ rpc: "GetGroup", vars: { uid: "a%2Fb" } });
  });

  it("refuses a %2F that stands in for a fixed segment's slash, though the plain path has a route", () => {
    for (const path of ["/iam/v2beta1/groups%2Fabc", "/iam%2Fv2beta1/groups", "/iam/v2beta1%2Fgroups/a"]) {
      expect(routeOf(table.match("GET", path.replaceAll("%2F", "/"))).rpc, path).toMatch(/^(GetGroup|ListGroups)$/);
      const m = table.match("GET", path);
      expect(m.kind === "misplaced-slash" && [m.field, m.route.errorDomain], path).toEqual(["path", "iam.localhost"]);
    }
  });

  it("refuses a %2F in a one-segment variable, naming the field", () => {
    const refused = (method: string, path: string): string | undefined => {
      const m = table.match(method, path);
      return m.kind === "misplaced-slash" ? m.field : `${m.kind}`;
    };
    // The plain path matches no route: the path as sent names the variable.
    expect(refused("GET", "/v1/issuers/acme/things/t%2F1")).toBe("name");
    expect(refused("GET", "/v1/issuers/a%2Fb/things/t")).toBe("claimMatch.issuer");
    expect(refused("POST", "/v1/things/a%2Fb:archive")).toBe("name");
    // The plain path would be a 405 (GET /v1/things/{name=**}); the path as sent is the tags route.
    expect(refused("PUT", "/v1/things/t%2Fx/tags")).toBe("name");
    // The plain path matches, but its %2F is inside {thing.name=things/*}, which has no **.
    expect(refused("PATCH", "/v1/things%2Ft1")).toBe("thing.name");
  });

  it("treats empty pieces around %2F as empty segments: no route", () => {
    for (const path of [
      "/iam/v2beta1/groups/a%2F%2Fb",
      "/iam/v2beta1/groups/a%2F",
      "/iam/v2beta1/groups/%2Fa",
      "/iam/v2beta1/groups/%2F",
    ]) {
      expect(table.match("GET", path).kind, path).toBe("not-found");
    }
  });

  it("describes bindings: body, bound paths, response body and the implicit update mask", () => {
    const update = table.routes.find((r) => r.method.name === "UpdateGroup");
    expect(update?.body.kind).toBe("field");
    expect(update?.boundPaths).toEqual([
      { path: "group.uid", by: "path" },
      { path: "group", by: "body" },
    ]);
    expect(update?.updateMask?.maskField.name).toBe("update_mask");
    expect(update?.updateMask?.bodyField.name).toBe("group");
    expect(update?.pathBindings[0]?.jsonPath).toBe("group.uid");

    const batch = table.routes.find((r) => r.method.name === "BatchCreateThings");
    expect(batch?.body.kind).toBe("all");
    expect(batch?.updateMask).toBeUndefined();

    const tags = table.routes.find((r) => r.method.name === "SetTags");
    expect(tags?.responseBody?.name).toBe("tags");
  });

  it("picks the ErrorInfo domain from the first path segment", () => {
    expect(table.routes.find((r) => r.method.name === "GetGroup")?.errorDomain).toBe("iam.localhost");
    expect(table.domainForPath("/iam/v2beta1/nope")).toBe("iam.localhost");
    expect(table.domainForPath("/v1/nope")).toBe("v1.localhost");
    expect(table.domainForPath("/unknown/x")).toBe("localhost");
    expect(table.domainForPath("/")).toBe("localhost");
  });

  it("fails construction when two rules claim the same method and path", () => {
    expect(() => new RouteTable([GroupsService, GroupsService], "localhost")).toThrow(/conflicts/);
  });

  it.each([
    ["/v1/{missing}", "", /not found/],
    ["/v1/{inner}", "", /singular scalar/],
    ["/v1/{inner.missing}", "", /not found/],
    ["/v1/{name.x}", "", /non-message/],
    ["/v1/{name", "", /invalid path template/],
    ["/v1/{name}", "nope", /body field "nope" not found/],
  ])("fails construction for the misconfigured rule %j body %j", (path, body, error) => {
    expect(() => new RouteTable([serviceWithRule(path, body)], "localhost")).toThrow(error);
  });
});

/** A one-method service `broken.Broken/Get(Req)` whose GET rule is `path` with `body`. */
function serviceWithRule(path: string, body: string): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, { pattern: { case: "get", value: path }, body }));
  const field = (name: string, number: number, type: FieldDescriptorProto_Type, typeName = "") => ({
    name,
    number,
    type,
    typeName,
    jsonName: name,
    label: FieldDescriptorProto_Label.OPTIONAL,
  });
  const file = create(FileDescriptorProtoSchema, {
    name: "broken.proto",
    package: "broken",
    syntax: "proto3",
    dependency: ["google/api/annotations.proto"],
    messageType: [
      { name: "Inner", field: [field("v", 1, FieldDescriptorProto_Type.STRING)] },
      {
        name: "Req",
        field: [field("name", 1, FieldDescriptorProto_Type.STRING), field("inner", 2, FieldDescriptorProto_Type.MESSAGE, ".broken.Inner")],
      },
    ],
    service: [{ name: "Broken", method: [{ name: "Get", inputType: ".broken.Req", outputType: ".broken.Req", options }] }],
  });
  const registry = createFileRegistry(file, (name) =>
    name === file_google_api_annotations.proto.name ? file_google_api_annotations : undefined,
  );
  const service = registry.getService("broken.Broken");
  if (service === undefined) throw new Error("broken.Broken not built");
  return service;
}
