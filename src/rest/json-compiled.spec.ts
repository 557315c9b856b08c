import { create, createRegistry, ScalarType, type DescField, type DescFile, type DescMessage, type Message } from "@bufbuild/protobuf";
import {
  AnySchema,
  DurationSchema,
  FieldMaskSchema,
  StringValueSchema,
  StructSchema,
  TimestampSchema,
  timestampFromDate,
} from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { GroupSchema, ListGroupsResponseSchema } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { ThingSchema } from "../../gen/resttest/v1/kitchen_sink_pb.js";
import { API_SERVICES } from "../services/index.js";
import { BAIL, CompiledWriters, isoMillis } from "./json-compiled.js";
import { JsonRenderer } from "./json-render.js";

// The compiled writers must render byte for byte what the general path (protojson, then the
// nulls and milliseconds) renders, or hand the message back: every case is rendered both ways.

const files = new Set<DescFile>();
const visit = (f: DescFile): void => {
  if (files.has(f)) return;
  files.add(f);
  for (const d of f.dependencies) visit(d);
};
for (const s of API_SERVICES) visit(s.service.file);
visit(ThingSchema.file);
const registry = createRegistry(...files);
const compiled = new JsonRenderer(registry);
const general = new JsonRenderer(registry, { compiled: false });

/** The body each renderer gives (or the error it throws): they must be the same. */
function both(schema: DescMessage, message: Message): { compiled: string; general: string } {
  const out = (r: JsonRenderer) => {
    try {
      return JSON.stringify(r.render(schema, message));
    } catch (e) {
      return `throws ${(e as Error).message}`;
    }
  };
  return { compiled: out(compiled), general: out(general) };
}

function expectSame(schema: DescMessage, message: Message): string {
  const r = both(schema, message);
  expect(r.compiled).toBe(r.general);
  return r.compiled;
}

const writers = () => new CompiledWriters((d) => ({ order: d.fields.map((f) => f.jsonName), nullable: new Set<string>() }));

const group = (createTime: { seconds: bigint; nanos: number } | undefined) =>
  create(GroupSchema, { uid: "g", name: "n", createTime: createTime && create(TimestampSchema, createTime) });

describe("compiled JSON writers", () => {
  it("render timestamps as toJson then milliseconds does: whole seconds, milliseconds, before 1970, the first and last instants", () => {
    const cases: [bigint, number, string][] = [
      [1_704_164_645n, 0, "2024-01-02T03:04:05.000Z"],
      [1_704_164_645n, 678_000_000, "2024-01-02T03:04:05.678Z"],
      [1_704_164_645n, 1_000_000, "2024-01-02T03:04:05.001Z"],
      [0n, 0, "1970-01-01T00:00:00.000Z"],
      [-1n, 500_000_000, "1969-12-31T23:59:59.500Z"],
      [-1n, 0, "1969-12-31T23:59:59.000Z"],
      [-2_208_988_800n, 999_000_000, "1900-01-01T00:00:00.999Z"],
      [-62_135_596_800n, 0, "0001-01-01T00:00:00.000Z"],
      [253_402_300_799n, 0, "9999-12-31T23:59:59.000Z"],
      [253_402_300_799n, 999_000_000, "9999-12-31T23:59:59.999Z"],
      // Finer than milliseconds keeps its digits (protojson's 6 or 9).
      [1_704_164_645n, 123_456_000, "2024-01-02T03:04:05.123456Z"],
      [1_704_164_645n, 1, "2024-01-02T03:04:05.000000001Z"],
      [-1n, 999_999_999, "1969-12-31T23:59:59.999999999Z"],
    ];
    for (const [seconds, nanos, text] of cases) {
      const body = expectSame(GroupSchema, group({ seconds, nanos }));
      expect(JSON.parse(body).createTime).toBe(text);
    }
    const now = new Date();
    expect(JSON.parse(expectSame(GroupSchema, create(GroupSchema, { updateTime: timestampFromDate(now) }))).updateTime).toBe(
      now.toISOString(),
    );
  });

  it("format an instant as toISOString does, over the whole range of years 1 to 9999", () => {
    const min = Date.parse("0001-01-01T00:00:00.000Z");
    const max = Date.parse("9999-12-31T23:59:59.999Z");
    const instants = [min, max, 0, -1, 1, 999, -999, Date.parse("2000-02-29T23:59:59.999Z"), Date.parse("1900-03-01T00:00:00Z")];
    instants.push(Date.parse("2100-02-28T12:00:00.010Z"), Date.parse("1600-02-29T00:00:00.100Z"), Date.parse("0004-02-29T00:00:00Z"));
    // Every day boundary of four centuries around 1970 (leap years, century years), and random instants.
    for (let day = -73_000; day <= 73_000; day += 1) instants.push(day * 86_400_000, day * 86_400_000 - 1);
    for (let i = 0; i < 100_000; i++) instants.push(Math.floor(min + Math.random() * (max - min)));
    for (const ms of instants) if (isoMillis(ms) !== new Date(ms).toISOString()) expect(isoMillis(ms)).toBe(new Date(ms).toISOString());
  });

  it("refuse what protojson refuses, with its error: out of range, negative or too many nanos", () => {
    for (const t of [
      { seconds: 253_402_300_800n, nanos: 0 },
      { seconds: -62_135_596_801n, nanos: 0 },
      { seconds: 0n, nanos: -1_000_000 },
      { seconds: 0n, nanos: 1_000_000_000 },
    ]) {
      const r = both(GroupSchema, group(t));
      expect(r.compiled).toMatch(/^throws cannot encode message google\.protobuf\.Timestamp to JSON/);
      expect(r.compiled).toBe(r.general);
    }
  });

  it("render groups and a page of them, nulls and all, through the compiled writer", () => {
    const writers = new CompiledWriters(() => ({ order: [], nullable: new Set() }));
    expect(writers.writerFor(GroupSchema)).toBeDefined();
    expect(writers.writerFor(ListGroupsResponseSchema)).toBeDefined();
    const full = create(GroupSchema, {
      uid: "o/1",
      name: 'quote " and \\ and \u2028',
      description: "ünïcode",
      resourceLimits: { repos: 3, zero: 0 },
      verified: true,
      createTime: timestampFromDate(new Date("2024-01-02T03:04:05.678Z")),
      updateTime: timestampFromDate(new Date("2024-01-02T03:04:05Z")),
    });
    expect(
      new CompiledWriters((d) => ({ order: d.fields.map((f) => f.jsonName), nullable: new Set() })).writerFor(GroupSchema)!(full),
    ).not.toBe(BAIL);
    expectSame(GroupSchema, full);
    expectSame(GroupSchema, create(GroupSchema));
    const page = create(ListGroupsResponseSchema, {
      groups: [full, create(GroupSchema, { uid: "x" })],
      nextPageToken: "t",
      totalCount: 10_000n,
    });
    expect(expectSame(ListGroupsResponseSchema, page)).toBe(
      '{"groups":[{"uid":"o/1","name":"quote \\" and \\\\ and \u2028","description":"ünïcode","resourceLimits":{"repos":3,"zero":0},"verified":true,"createTime":"2024-01-02T03:04:05.678Z","updateTime":"2024-01-02T03:04:05.000Z"},{"uid":"x","name":"","description":"","resourceLimits":{},"verified":false,"createTime":null,"updateTime":null}],"nextPageToken":"t","totalCount":"10000","skipped":0}',
    );
  });

  it("hand back what they were not made for: unknown fields, a key named __proto__, another type's message", () => {
    const writer = new CompiledWriters((d) => ({ order: d.fields.map((f) => f.jsonName), nullable: new Set() })).writerFor(GroupSchema)!;
    const unknown = create(GroupSchema, { uid: "u" });
    unknown.$unknown = [{ no: 99, wireType: 0, data: new Uint8Array([1]) }];
    expect(writer(unknown)).toBe(BAIL);
    expectSame(GroupSchema, unknown);
    const proto = create(GroupSchema);
    Object.defineProperty(proto.resourceLimits, "__proto__", { value: 1, enumerable: true });
    expect(writer(proto)).toBe(BAIL);
    expectSame(GroupSchema, proto);
    expect(writer(create(TimestampSchema) as never)).toBe(BAIL);
    expectSame(GroupSchema, create(TimestampSchema) as never);
  });

  it("render every message of the API as the general path does, empty and filled", () => {
    let covered = 0;
    let messages = 0;
    for (const desc of registry) {
      if (desc.kind !== "message") continue;
      messages++;
      if (new CompiledWriters((d) => ({ order: d.fields.map((f) => f.jsonName), nullable: new Set() })).writerFor(desc)) covered++;
      expectSame(desc, create(desc));
      for (const variant of [0, 1, 2]) expectSame(desc, filled(desc, variant, 0));
    }
    // Well-known types with a JSON form of their own are protojson's, also as a whole answer.
    for (const wkt of [TimestampSchema, StructSchema, AnySchema, DurationSchema, FieldMaskSchema, StringValueSchema]) {
      expect(writers().writerFor(wkt)).toBeUndefined();
    }
    expect(expectSame(TimestampSchema, create(TimestampSchema, { seconds: 1n }))).toBe('"1970-01-01T00:00:01Z"');
    // Most of the API's messages are written by the compiled writers.
    expect(messages).toBeGreaterThan(100);
    expect(covered / messages).toBeGreaterThan(0.5);
  });
});

/** A message of `desc` with every field set (variants differ in values and in what is left out). */
function filled(desc: DescMessage, variant: number, depth: number): Message {
  const m = create(desc) as unknown as Record<string, unknown>;
  const seenOneofs = new Set<string>();
  for (const f of desc.fields) {
    if (f.oneof) {
      if (seenOneofs.has(f.oneof.localName) || variant === 2) continue;
      seenOneofs.add(f.oneof.localName);
      const v = value(f, variant, depth);
      if (v !== undefined) m[f.oneof.localName] = { case: f.localName, value: v };
      continue;
    }
    if (f.fieldKind === "list") m[f.localName] = [item(f, variant, depth), item(f, variant + 1, depth)].filter((x) => x !== undefined);
    else if (f.fieldKind === "map") {
      const v = item(f, variant, depth);
      if (v !== undefined) m[f.localName] = { [mapKey(f, 0)]: v, [mapKey(f, 1)]: item(f, variant + 1, depth) };
    } else {
      const v = value(f, variant, depth);
      if (v !== undefined && !(variant === 1 && f.fieldKind === "message")) m[f.localName] = v;
    }
  }
  return m as unknown as Message;
}

function mapKey(f: DescField & { fieldKind: "map" }, i: number): string {
  if (f.mapKey === ScalarType.BOOL) return i ? "false" : "true";
  if (f.mapKey === ScalarType.STRING) return i ? "b key" : "a";
  return i ? "-2" : "7";
}

function item(f: DescField, variant: number, depth: number): unknown {
  if (f.fieldKind === "list") {
    if (f.listKind === "scalar") return scalar(f.scalar, variant);
    if (f.listKind === "enum")
      return enumValue(
        f.enum.values.map((v) => v.number),
        variant,
      );
    return message(f.message, variant, depth);
  }
  if (f.fieldKind === "map") {
    if (f.mapKind === "scalar") return scalar(f.scalar, variant);
    if (f.mapKind === "enum")
      return enumValue(
        f.enum.values.map((v) => v.number),
        variant,
      );
    return message(f.message, variant, depth);
  }
  return undefined;
}

function value(f: DescField, variant: number, depth: number): unknown {
  if (f.fieldKind === "scalar") return scalar(f.scalar, variant);
  if (f.fieldKind === "enum")
    return enumValue(
      f.enum.values.map((v) => v.number),
      variant,
    );
  if (f.fieldKind === "message") return message(f.message, variant, depth);
  return undefined;
}

function message(desc: DescMessage, variant: number, depth: number): unknown {
  if (desc.typeName === "google.protobuf.Timestamp") {
    const nanos = [0, 678_000_000, 123_456_789][variant % 3]!;
    return create(TimestampSchema, { seconds: variant % 2 ? -86_400n : 1_704_164_645n, nanos });
  }
  if (desc.typeName.startsWith("google.protobuf.")) return variant === 0 ? create(desc) : undefined;
  return depth >= 3 ? create(desc) : filled(desc, variant, depth + 1);
}

function enumValue(numbers: number[], variant: number): number {
  // The last variant writes a number the enum does not name.
  return variant === 2 ? 12_345 : (numbers[Math.min(numbers.length - 1, variant + 1)] ?? 0);
}

function scalar(type: ScalarType, variant: number): unknown {
  switch (type) {
    case ScalarType.STRING:
      return ["", 'x "y" \\ z', "ünï\u2028"][variant % 3];
    case ScalarType.BOOL:
      return variant % 2 === 0;
    case ScalarType.BYTES:
      return new Uint8Array([variant, 255]);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return [1.5, Number.NaN, Number.NEGATIVE_INFINITY, -0][variant % 4];
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return [0n, -9_007_199_254_740_993n, 42n][variant % 3];
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return [0n, 18_446_744_073_709_551_615n, 42n][variant % 3];
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return [0, 4_294_967_295, 7][variant % 3];
    default:
      return [0, -2_147_483_648, 7][variant % 3];
  }
}
