import type { DescField, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { servicesInGen } from "../../../test/support/generated-services.js";
import { PUBLIC_SERVICE_DESCRIPTORS } from "../../../gen/api-index.js";
import { GroupsService } from "../../../gen/platform/iam/v1/groups_pb.js";
import { GroupsService as V2GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { TagsService as V2TagsService } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import { standardMethodOf, type StandardMethod } from "../../descriptors/index.js";
import type { ServiceContext } from "../context.js";
import { v1Impl, type AnyV1Row } from "./adapter.js";
import { V1_API_SERVICES } from "./index.js";
import { V1_TABLE } from "./table.js";

// The v1 table (docs/design.md, "v1 beside v2") against the generated
// descriptors: a v1 service or method added to the protos without a row, or a
// row naming a field the protos do not have, fails here rather than at a caller.

/** Every service exported by a generated gen/platform/<package>/v1/*_pb.ts. */
// The v1 API: services of v1 packages that need an API token (the public token service is no part of it).
const publicServices = new Set(PUBLIC_SERVICE_DESCRIPTORS.map((s) => s.typeName));
const v1ServicesInProtos = async () =>
  (await servicesInGen((f) => /(^|\/)v1\/[^/]+_pb\.ts$/.test(f))).filter((s) => !publicServices.has(s.typeName));

// No handler runs here, so the v2 implementation is a stand-in with every
// method of the v2 service (the real ones need a database; test/e2e/v1-api.spec.ts
// runs them).
const ctx = {} as ServiceContext;
const unused = () => Promise.reject(new Error("not called"));
const withStandIn = (row: AnyV1Row): AnyV1Row => ({
  ...row,
  v2Impl: () => Object.fromEntries(row.v2.methods.map((m) => [m.localName, unused])) as ReturnType<AnyV1Row["v2Impl"]>,
});

const byVerb = (service: DescService, verb: StandardMethod): DescMethod => {
  const method = service.methods.find((m) => standardMethodOf(m) === verb);
  if (!method) throw new Error(`${service.typeName} has no ${verb}`);
  return method;
};
const twin = (row: AnyV1Row, method: DescMethod): DescMethod => row.v2.methods.find((m) => m.name === method.name)!;
const field = (message: DescMessage, localName: string): DescField | undefined => message.fields.find((f) => f.localName === localName);
const messageOf = (f: DescField | undefined): DescMessage | undefined => (f?.fieldKind === "message" ? f.message : undefined);

describe("the v1 table", () => {
  it("has a row for every v1 service in the protos, and no other", async () => {
    const inProtos = (await v1ServicesInProtos()).map((s) => s.typeName).sort();
    expect(inProtos.length).toBeGreaterThan(0);
    expect(V1_TABLE.map((row) => row.v1.typeName).sort()).toEqual(inProtos);
    expect(V1_API_SERVICES.map((s) => s.service)).toEqual(V1_TABLE.map((row) => row.v1));
  });

  describe.each(V1_TABLE.map((row) => [row.v1.typeName, row] as const))("%s", (_name, row) => {
    it("implements every method of the v1 service", () => {
      const impl = v1Impl(withStandIn(row), ctx) as Record<string, unknown>;
      for (const method of row.v1.methods) expect(typeof impl[method.localName], method.name).toBe("function");
      expect(Object.keys(impl).sort()).toEqual(row.v1.methods.map((m) => m.localName).sort());
    });

    it("calls a unary v2 method of the same name for each", () => {
      for (const method of row.v1.methods) {
        expect(method.methodKind, method.name).toBe("unary");
        expect(twin(row, method)?.methodKind, method.name).toBe("unary");
      }
    });

    it("names the resource message and field the Create and Update requests hold", () => {
      for (const verb of ["Create", "Update"] as const) {
        const method = byVerb(row.v1, verb);
        expect(method.output).toBe(row.schema);
        expect(messageOf(field(method.input, row.field)), `v1 ${verb}`).toBe(row.schema);
      }
      expect(messageOf(field(twin(row, byVerb(row.v1, "Update")).input, row.field)), "v2 Update").toBe(
        twin(row, byVerb(row.v1, "Update")).output,
      );
      // A row with its own Create request builds it from other fields.
      if (!row.createRequest) {
        const create = twin(row, byVerb(row.v1, "Create"));
        expect(messageOf(field(create.input, row.field)), "v2 Create").toBe(create.output);
      }
    });

    it("names the v2 List results, and passes on every v1 List filter the v2 List has", () => {
      const list = byVerb(row.v1, "List");
      const items = field(list.output, "items");
      expect(items?.fieldKind === "list" && items.listKind === "message" ? items.message : undefined).toBe(row.schema);
      const v2List = twin(row, list);
      const results = field(v2List.output, row.v2Items);
      expect(results?.fieldKind, row.v2Items).toBe("list");
      expect(list.input.fields.map((f) => f.localName).sort()).toEqual(["id", "uidp", ...row.listFilters].sort());
      for (const name of row.listFilters) expect(field(v2List.input, name)?.fieldKind, name).toBe("scalar");
    });
  });

  it("refuses a v1 method that is not a List, Create, Update or Delete", () => {
    const row = { ...withStandIn(V1_TABLE.find((r) => r.v1 === GroupsService)!), v1: V2GroupsService };
    expect(() => v1Impl(row, ctx)).toThrow(
      "platform.iam.v2beta1.GroupsService.GetGroup: a v1 method must be a List, Create, Update or Delete",
    );
  });

  it("refuses a v1 method whose v2 twin does not exist", () => {
    const row = { ...V1_TABLE.find((r) => r.v1 === GroupsService)!, v2: V2TagsService, v2Impl: () => ({}) };
    expect(() => v1Impl(row, ctx)).toThrow(
      "platform.iam.v1.GroupsService.ListGroups: platform.registry.v2beta1.TagsService has no ListGroups to call",
    );
  });
});
