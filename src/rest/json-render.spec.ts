import { create } from "@bufbuild/protobuf";
import { EmptySchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { GroupSchema, ListGroupsResponseSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { JsonRenderer } from "./json-render.js";
import { ThingSchema } from "../../gen/resttest/v1/kitchen_sink_pb.js";

const renderer = new JsonRenderer(undefined);

const EMPTY_INNER = { issuer: "", subject: "", deeper: null, seenTime: null };

describe("JsonRenderer", () => {
  it("renders a group with implicit fields emitted and unset timestamps as null", () => {
    const json = renderer.render(GroupSchema, create(GroupSchema, { uid: "abc", name: "g" }));
    expect(json).toEqual({
      uid: "abc",
      name: "g",
      description: "",
      resourceLimits: {},
      verified: false,
      createTime: null,
      updateTime: null,
    });
    expect(JSON.stringify(json)).toBe(
      '{"uid":"abc","name":"g","description":"","resourceLimits":{},"verified":false,"createTime":null,"updateTime":null}',
    );
  });

  it("renders set timestamps as RFC 3339 and int64 as strings", () => {
    const group = create(GroupSchema, { uid: "a", createTime: timestampFromDate(new Date("2024-01-02T03:04:05.678Z")) });
    const list = create(ListGroupsResponseSchema, { groups: [group], totalCount: 12n, nextPageToken: "" });
    expect(renderer.render(ListGroupsResponseSchema, list)).toEqual({
      groups: [
        {
          uid: "a",
          name: "",
          description: "",
          resourceLimits: {},
          verified: false,
          createTime: "2024-01-02T03:04:05.678Z",
          updateTime: null,
        },
      ],
      nextPageToken: "",
      totalCount: "12",
      skipped: 0,
    });
  });

  it("always renders milliseconds, also on a whole second, and keeps finer precision", () => {
    const group = create(GroupSchema, {
      createTime: timestampFromDate(new Date("2024-01-02T03:04:05.000Z")),
      updateTime: { seconds: 1704164645n, nanos: 123456000 },
    });
    expect(renderer.render(GroupSchema, group)).toMatchObject({
      createTime: "2024-01-02T03:04:05.000Z",
      updateTime: "2024-01-02T03:04:05.123456Z",
    });
  });

  it("renders every unset singular message field as null and omits unset optional and oneof fields", () => {
    const json = renderer.render(ThingSchema, create(ThingSchema, { name: "t" }));
    expect(json).toEqual({
      name: "t",
      count: 0,
      big: "0",
      small: 0,
      flag: false,
      ratio: 0,
      approx: 0,
      data: "",
      color: "COLOR_UNSPECIFIED",
      tags: [],
      numbers: [],
      colors: [],
      claimMatch: null,
      when: null,
      byKey: {},
      inners: [],
      wrapped: null,
      mask: null,
      signedBig: "0",
      ubig: "0",
      byNum: {},
      meta: null,
      limits: {},
    });
    // Declaration order is kept when nulls are added.
    expect(Object.keys(json as object).slice(12, 16)).toEqual(["claimMatch", "when", "byKey", "inners"]);
  });

  it("fills nulls recursively in nested messages, lists and maps of messages", () => {
    const thing = create(ThingSchema, {
      claimMatch: { issuer: "i", deeper: {} },
      inners: [{}, { subject: "s" }],
      byKey: { k: {} },
      choice: { case: "chosen", value: {} },
      maybeInner: {},
    });
    const json = renderer.render(ThingSchema, thing) as Record<string, unknown>;
    expect(json["claimMatch"]).toEqual({ issuer: "i", subject: "", deeper: EMPTY_INNER, seenTime: null });
    expect(json["inners"]).toEqual([EMPTY_INNER, { ...EMPTY_INNER, subject: "s" }]);
    expect(json["byKey"]).toEqual({ k: EMPTY_INNER });
    expect(json["chosen"]).toEqual(EMPTY_INNER);
    expect(json["maybeInner"]).toEqual(EMPTY_INNER);
    expect(json).not.toHaveProperty("other");
    expect(json).not.toHaveProperty("maybe");
  });

  it("renders set optional fields, even with zero values", () => {
    const json = renderer.render(ThingSchema, create(ThingSchema, { maybe: "" })) as Record<string, unknown>;
    expect(json["maybe"]).toBe("");
  });

  it("renders google.protobuf.Empty as {}", () => {
    expect(renderer.render(EmptySchema, create(EmptySchema))).toEqual({});
  });

  it("renders only the response_body field when one is selected", () => {
    const field = ThingSchema.fields.find((f) => f.name === "tags");
    expect(renderer.render(ThingSchema, create(ThingSchema, { tags: ["a"] }), field)).toEqual(["a"]);
    const claim = ThingSchema.fields.find((f) => f.name === "claim_match");
    expect(renderer.render(ThingSchema, create(ThingSchema), claim)).toBeNull();
  });
});
