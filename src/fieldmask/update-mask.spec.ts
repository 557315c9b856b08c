import { create } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { ConnectError, Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { GroupSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { applyUpdate, setFieldPaths } from "./update-mask.js";

const current = create(GroupSchema, {
  uid: "u1",
  name: "old",
  description: "desc",
  resourceLimits: { clusters: 1 },
  verified: true,
});
const mask = (...paths: string[]) => create(FieldMaskSchema, { paths });

function code(fn: () => unknown): Code | undefined {
  try {
    fn();
  } catch (e) {
    return e instanceof ConnectError ? e.code : undefined;
  }
  return undefined;
}

describe("applyUpdate", () => {
  it("without a mask changes the fields set in the patch", () => {
    const next = applyUpdate(GroupSchema, current, create(GroupSchema, { description: "new" }), undefined);
    expect(next).toMatchObject({ name: "old", description: "new", resourceLimits: { clusters: 1 }, verified: true });
  });

  it("without a mask ignores output-only fields the client echoes", () => {
    const next = applyUpdate(GroupSchema, current, create(GroupSchema, { uid: "other", verified: false, name: "n" }), undefined);
    expect(next).toMatchObject({ uid: "u1", verified: true, name: "n" });
  });

  it("with a mask changes exactly those paths, clearing ones unset in the patch", () => {
    const patch = create(GroupSchema, { name: "ignored", description: "" });
    const next = applyUpdate(GroupSchema, current, patch, mask("description", "resource_limits"));
    expect(next).toMatchObject({ name: "old", description: "", resourceLimits: {} });
  });

  it("accepts JSON names in the mask", () => {
    const next = applyUpdate(GroupSchema, current, create(GroupSchema, { resourceLimits: { idps: 2 } }), mask("resourceLimits"));
    expect(next.resourceLimits).toEqual({ idps: 2 });
  });

  it("replaces every writable field with *", () => {
    const next = applyUpdate(GroupSchema, current, create(GroupSchema, { name: "n" }), mask("*"));
    expect(next).toMatchObject({ uid: "u1", name: "n", description: "", resourceLimits: {}, verified: true });
  });

  it("does not alias the patch's maps into the result", () => {
    const patch = create(GroupSchema, { resourceLimits: { repositories: 3 } });
    const next = applyUpdate(GroupSchema, current, patch, undefined);
    patch.resourceLimits["repositories"] = 9;
    // a map is one field: the patch replaces it whole
    expect(next.resourceLimits).toEqual({ repositories: 3 });
  });

  it.each([["colour"], ["verified"], ["create_time"], ["uid"], ["name.first"], ["*", "name"]])(
    "rejects the mask %s with INVALID_ARGUMENT",
    (...paths) => {
      expect(code(() => applyUpdate(GroupSchema, current, create(GroupSchema), mask(...paths)))).toBe(Code.InvalidArgument);
    },
  );
});

describe("setFieldPaths", () => {
  it("lists the fields set, by proto name", () => {
    expect(setFieldPaths(GroupSchema, create(GroupSchema, { name: "a", resourceLimits: { x: 1 } }))).toEqual(["name", "resource_limits"]);
  });
});
