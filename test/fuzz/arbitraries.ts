import { ScalarType, type DescEnum, type DescField, type DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import type { JsonObject, JsonValue } from "../support/clients.js";

// Value generators for the fuzz suite: hostile strings, uids, numbers, JSON
// of the wrong shape, bearer tokens, and requests built from a message
// descriptor (proto init objects for Connect-ES, proto JSON for REST and
// Connect+JSON).

const HEX = [..."0123456789abcdef"];

/** `min`–`max` lowercase hex characters. */
export const hex = (min: number, max = min): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...HEX), minLength: min, maxLength: max });

/** Any UTF-16 code unit, lone surrogates and NUL included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));

/**
 * Any code point, lone surrogates included: what fast-check's `unit: "binary"` draws, without
 * the map back from 1.1 million characters to their indexes that it builds once and keeps
 * (100 MB of heap for the rest of the worker, which every later full GC then marks).
 */
const codePoint = fc.integer({ min: 0, max: 0x10ffff }).map((c) => String.fromCodePoint(c));

export const SPECIAL_STRINGS: readonly string[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff",
  "x\ud800y",
  "\uffff",
  "\ufeff",
  "\u202e",
  "\u0085",
  "😀",
  "é",
  "ｆｕｌｌ",
  "../",
  "../../etc/passwd",
  "..",
  ".",
  "%00",
  "%ff",
  "%2F",
  "%2f..%2f",
  "%u0000",
  "a//b",
  "/",
  "//",
  "\\",
  "'",
  '"',
  "';--",
  "' OR 1=1 --",
  "{}",
  "[]",
  "null",
  "undefined",
  "true",
  "NaN",
  "Infinity",
  "-1",
  "1e309",
  "0x10",
  "9".repeat(40),
  "*",
  "**",
  "%",
  "?",
  "#",
  "&",
  "=",
  ":",
  ":batchCreate",
  "<script>alert(1)</script>",
  "${jndi:ldap://x}",
  "\r\n",
  "\t",
  "a b",
  "A".repeat(300),
  "viewer",
  "owner",
  "registry.pull",
  "__proto__",
  "constructor",
  "(a+)+$",
  "[",
  "\\p{L}",
];

/** A string of 100k+ characters (one repeated unit: ASCII, NUL, accents, emoji, slash, percent, a lone surrogate). */
export const hugeString: fc.Arbitrary<string> = fc
  .record({ unit: fc.constantFrom("a", "\u0000", "é", "😀", "/", "%", "\ud800", "a/"), length: fc.integer({ min: 100_000, max: 130_000 }) })
  .map(({ unit, length }) => unit.repeat(Math.ceil(length / unit.length)));

/** Text with C0/C1 control characters in it (escape sequences, bells, DEL, NEL), some long: 4096 of them render as 24 KB of JSON. */
export const controlString: fc.Arbitrary<string> = fc.oneof(
  fc
    .tuple(
      fc.string({ maxLength: 8 }),
      fc.constantFrom("\u0001", "\u0007", "\b", "\u000b", "\u000c", "\u001b[31m", "\u007f", "\u0085", "\u009f", "\r"),
      fc.string({ maxLength: 8 }),
    )
    .map((p) => p.join("")),
  fc
    .record({ unit: fc.constantFrom("\u0001", "\u001b", "\u007f", "\u0090"), n: fc.integer({ min: 200, max: 4096 }) })
    .map(({ unit, n }) => unit.repeat(n)),
);

/** Hostile strings: specials, random ASCII, any code point, any code unit, graphemes, concatenations, control characters, rarely huge ones. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: controlString },
  { weight: 5, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: codePoint, maxLength: 30 }) },
  { weight: 2, arbitrary: fc.string({ unit: codeUnit, maxLength: 12 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...SPECIAL_STRINGS), fc.string({ maxLength: 10 }), fc.constantFrom(...SPECIAL_STRINGS))
      .map((p) => p.join("")),
  },
  { weight: 1, arbitrary: hugeString },
);

/** Ordinary values (names, digests, URLs, capabilities), so that some requests pass validation and reach the database. */
export const benignString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "app",
    "v1",
    "team",
    "robot",
    "description",
    `sha256:${"a".repeat(64)}`,
    "https://accounts.invalid",
    "repo.list",
    "groups.list",
    "viewer",
    "3600s",
    "name",
    "name desc",
    "create_time",
    "CVE-2099-0001",
  ),
  fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,14}$/),
);

/** Uid-shaped and uid-adjacent strings; `known` are uids that exist (so the odd ones land next to real rows). */
export function uidArbitrary(known: readonly string[]): fc.Arbitrary<string> {
  const real = fc.constantFrom(...known);
  return fc.oneof(
    { weight: 2, arbitrary: hex(40) }, // a root uid that does not exist
    { weight: 2, arbitrary: fc.tuple(hex(40), hex(16)).map(([a, b]) => `${a}/${b}`) },
    { weight: 1, arbitrary: fc.tuple(hex(40), hex(16), hex(16)).map((p) => p.join("/")) },
    { weight: 1, arbitrary: hex(40).map((s) => s.toUpperCase()) },
    { weight: 1, arbitrary: hex(41, 90) },
    { weight: 1, arbitrary: hex(1, 39) },
    { weight: 3, arbitrary: real },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          real,
          fc.oneof(
            hex(16),
            hex(16).map((s) => s.toUpperCase()),
            hex(1, 30),
            nastyString,
          ),
        )
        .map(([k, s]) => `${k}/${s}`),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          real,
          fc.constantFrom(
            "",
            "/",
            "//",
            "/x",
            "%2F0123456789abcdef",
            "\u0000",
            "/\u0000",
            "/..",
            "/../..",
            "%00",
            "%ff",
            "/%2e%2e",
            " ",
            "\ud800",
          ),
        )
        .map(([k, s]) => `${k}${s}`),
    },
    { weight: 1, arbitrary: fc.tuple(real, real).map(([a, b]) => `${a}//${b}`) },
    // Deep: around the bound of 16 groups (18 segments for a tag), and far beyond it (the
    // report's 4,000 and 30,000 segments: 68 KB and 510 KB, in bodies; in a URL over 16 KB
    // the server answers 431).
    { weight: 2, arbitrary: fc.tuple(real, fc.integer({ min: 12, max: 20 })).map(([k, n]) => `${k}${"/0123456789abcdef".repeat(n)}`) },
    {
      weight: 1,
      arbitrary: fc.tuple(hex(40), fc.constantFrom(100, 800, 4000, 30_000)).map(([k, n]) => `${k}${"/0123456789abcdef".repeat(n)}`),
    },
    { weight: 1, arbitrary: fc.tuple(hex(40), nastyString).map(([a, b]) => `${a}/${b}`) },
    { weight: 1, arbitrary: fc.constantFrom("a//b", "", "/", "//", "viewer", "owner", "registry.pull", "x/", "/x", "0", "-") },
    { weight: 2, arbitrary: nastyString },
  );
}

/** Numbers a JSON body may carry: negative, huge, fractional, out of every integer range. */
export const jsonNumber: fc.Arbitrary<number> = fc.oneof(
  fc.integer(),
  fc.constantFrom(
    -1,
    0,
    1,
    2 ** 31 - 1,
    2 ** 31,
    -(2 ** 31),
    -(2 ** 31) - 1,
    2 ** 32,
    2 ** 53,
    2 ** 63,
    -(2 ** 63),
    1e308,
    -1e308,
    0.5,
    1.5,
    -0.5,
    5e-324,
  ),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Numbers as strings: what query parameters, and proto JSON's quoted numbers, carry. */
export const numericString: fc.Arbitrary<string> = fc.oneof(
  jsonNumber.map(String),
  fc.constantFrom(
    "NaN",
    "Infinity",
    "-Infinity",
    "1.5",
    "-1",
    "-0",
    "1e3",
    "1e999",
    "0x1A",
    "",
    " 1",
    "1 ",
    "+1",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551616",
    "99999999999999999999999",
    "abc",
    "1_000",
    "１",
    "0.0000001",
  ),
);

const jsonLeaf: fc.Arbitrary<JsonValue> = fc.oneof(fc.constant(null), fc.boolean(), jsonNumber, nastyString);

/** Arrays or objects nested up to 300 deep. */
const deeplyNested: fc.Arbitrary<JsonValue> = fc.tuple(fc.integer({ min: 1, max: 300 }), fc.boolean()).map(([depth, arrays]) => {
  let v: JsonValue = "x";
  for (let i = 0; i < depth; i++) v = arrays ? [v] : { a: v };
  return v;
});

/** Any JSON value, often of a shape nobody expects. */
export const anyJson: fc.Arbitrary<JsonValue> = fc.oneof(
  { weight: 3, arbitrary: jsonLeaf },
  { weight: 1, arbitrary: fc.array(jsonLeaf, { maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("__proto__", "constructor", "\u0000", "")), jsonLeaf, {
      maxKeys: 4,
    }),
  },
  { weight: 1, arbitrary: deeplyNested },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonValue> },
);

/** Raw request bodies that are not (valid) JSON. */
export const rawBody: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    "",
    "{",
    "}",
    "[",
    "nul",
    "\u0000",
    '{"a":}',
    '{"a":1,}',
    "{'a':1}",
    "\ufeff{}",
    '{"a":1}{"b":2}',
    "1e999999",
    '"\\ud800"',
    '{"\\u0000":1}',
    '{"__proto__":{"x":1}}',
  ),
  fc.integer({ min: 1000, max: 200_000 }).map((d) => "[".repeat(d) + "]".repeat(d)),
  fc.integer({ min: 1000, max: 100_000 }).map((d) => `${'{"a":'.repeat(d)}1${"}".repeat(d)}`),
  fc.integer({ min: 1000, max: 100_000 }).map((d) => "[".repeat(d)),
  fc.integer({ min: 1_048_000, max: 1_100_000 }).map((n) => `{"name":"${"a".repeat(n)}"}`),
  fc.string({ unit: codePoint, maxLength: 200 }),
  fc.string({ unit: codeUnit, maxLength: 50 }),
  // Invalid JSON followed by astral characters: a parser's error excerpt may cut a surrogate pair in half.
  fc
    .tuple(fc.string({ maxLength: 12 }), fc.constantFrom("😀", "𝄞", "𠜎"), fc.integer({ min: 1, max: 12 }))
    .map(([head, c, n]) => `x${head}${c.repeat(n)}`),
);

// ---------------------------------------------------------------------------
// From descriptors.

const WKT = "google.protobuf.";

function isInt32(t: ScalarType): boolean {
  return t === ScalarType.INT32 || t === ScalarType.SINT32 || t === ScalarType.SFIXED32;
}
function isUint32(t: ScalarType): boolean {
  return t === ScalarType.UINT32 || t === ScalarType.FIXED32;
}
function isInt64(t: ScalarType): boolean {
  return t === ScalarType.INT64 || t === ScalarType.SINT64 || t === ScalarType.SFIXED64;
}
function isUint64(t: ScalarType): boolean {
  return t === ScalarType.UINT64 || t === ScalarType.FIXED64;
}

/**
 * A repeated field's values: usually up to 4, sometimes one value repeated past every cap
 * (1,001 to 5,000 entries: uidp.ids, a batch's requests, a role's capabilities).
 */
function longOrShort<T>(element: fc.Arbitrary<T>): fc.Arbitrary<T[]> {
  return fc.oneof(
    { weight: 9, arbitrary: fc.array(element, { maxLength: 4 }) },
    // Only small values are repeated (a 510 KB uid 5,000 times would not fit in a string).
    {
      weight: 1,
      arbitrary: fc.tuple(element, fc.integer({ min: 1001, max: 5000 })).map(([e, n]) => (isSmall(e) ? Array<T>(n).fill(e) : [e])),
    },
  );
}

/** Whether a value holds at most `budget` characters of strings and entries (a rough size, without serializing it). */
function isSmall(value: unknown, budget = { left: 512 }): boolean {
  if (typeof value === "string") budget.left -= value.length;
  else if (value instanceof Uint8Array) budget.left -= value.length;
  else if (value !== null && typeof value === "object") {
    for (const v of Object.values(value)) {
      budget.left -= 1;
      if (budget.left < 0 || !isSmall(v, budget)) return false;
    }
  }
  return budget.left >= 0;
}

export interface DescriptorArbitraryOptions {
  /** Strings for string fields (uids and hostile strings). */
  strings: fc.Arbitrary<string>;
  /** Message nesting depth after which sub-messages are left unset. */
  maxDepth: number;
  /** JSON only: values of the right type (well-formed timestamps, small numbers), no unknown fields; hostility only through `strings`. */
  wellTyped?: boolean;
}

const enumNumbers = (e: DescEnum) => fc.oneof(fc.constantFrom(...e.values.map((v) => v.number)), fc.integer({ min: -5, max: 1000 }));

/** Proto3 JSON (REST bodies, Connect+JSON) for a message: each field perhaps present, under its JSON or proto name, often of the wrong type. */
export class JsonFromDescriptor {
  private readonly cache = new Map<string, fc.Arbitrary<JsonObject>>();

  constructor(private readonly opts: DescriptorArbitraryOptions) {}

  message(desc: DescMessage, depth = 0): fc.Arbitrary<JsonObject> {
    const key = `${desc.typeName}@${depth}`;
    let arb = this.cache.get(key);
    if (!arb) {
      arb = this.build(desc, depth);
      this.cache.set(key, arb);
    }
    return arb;
  }

  private build(desc: DescMessage, depth: number): fc.Arbitrary<JsonObject> {
    if (depth > this.opts.maxDepth) return fc.constant({});
    if (this.opts.wellTyped) {
      const entries = desc.fields.map((f) =>
        fc.option(this.field(f, depth), { freq: 2, nil: undefined }).map((v) => (v === undefined ? undefined : ([f.jsonName, v] as const))),
      );
      return fc.tuple(...entries).map((list) => {
        const out: JsonObject = {};
        for (const e of list) if (e) out[e[0]] = e[1];
        return out;
      });
    }
    const entries = desc.fields.map((f) =>
      fc
        .option(fc.tuple(fc.boolean(), fc.oneof({ weight: 5, arbitrary: this.field(f, depth) }, { weight: 1, arbitrary: anyJson })), {
          freq: 2,
        })
        .map((o) => (o === null ? undefined : ([o[0] ? f.name : f.jsonName, o[1]] as const))),
    );
    const unknown = fc.option(
      fc.tuple(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom("__proto__", "constructor", "@type")), anyJson),
      { freq: 8 },
    );
    return fc.tuple(fc.tuple(...entries), unknown).map(([list, extra]) => {
      const out: JsonObject = {};
      for (const e of list) if (e) out[e[0]] = e[1];
      if (extra) Object.defineProperty(out, extra[0], { value: extra[1], enumerable: true, writable: true, configurable: true });
      return out;
    });
  }

  private field(f: DescField, depth: number): fc.Arbitrary<JsonValue> {
    switch (f.fieldKind) {
      case "list": {
        const element =
          f.listKind === "message"
            ? this.messageValue(f.message, depth)
            : f.listKind === "enum"
              ? this.enumValue(f.enum)
              : this.scalar(f.scalar);
        return longOrShort(element);
      }
      case "map": {
        const value =
          f.mapKind === "message"
            ? this.messageValue(f.message, depth)
            : f.mapKind === "enum"
              ? this.enumValue(f.enum)
              : this.scalar(f.scalar);
        const keys =
          f.mapKey === ScalarType.STRING ? fc.oneof(this.opts.strings, fc.constantFrom("clusters", "idps", "repositories")) : numericString;
        return fc.oneof(
          { weight: 9, arbitrary: fc.dictionary(keys, value, { maxKeys: 3 }) },
          // Past the cap on entries (resource_limits, client_ids), or with a key past the cap on keys.
          {
            weight: 1,
            arbitrary: fc
              .tuple(value, fc.integer({ min: 1001, max: 3000 }))
              .map(([v, n]) => Object.fromEntries(Array.from({ length: isSmall(v) ? n : 1 }, (_, i) => [`k${i}`, v]))),
          },
          { weight: 1, arbitrary: value.map((v) => ({ ["k".repeat(300)]: v })) },
        );
      }
      case "enum":
        return this.enumValue(f.enum);
      case "message":
        return this.messageValue(f.message, depth);
      case "scalar":
        return this.scalar(f.scalar);
    }
  }

  private enumValue(e: DescEnum): fc.Arbitrary<JsonValue> {
    if (this.opts.wellTyped) return fc.constantFrom(...e.values.map((v) => v.name));
    return fc.oneof(fc.constantFrom(...e.values.map((v) => v.name)), enumNumbers(e), nastyString);
  }

  private scalar(t: ScalarType): fc.Arbitrary<JsonValue> {
    if (t === ScalarType.STRING) return this.opts.strings;
    if (this.opts.wellTyped) {
      if (t === ScalarType.BOOL) return fc.boolean();
      if (t === ScalarType.BYTES) return fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b).toString("base64"));
      return fc.integer({ min: 0, max: 300 });
    }
    if (t === ScalarType.BOOL) return fc.oneof(fc.boolean(), fc.constantFrom("true", "false", 0, 1, "yes"));
    if (t === ScalarType.BYTES)
      return fc.oneof(
        fc.uint8Array({ maxLength: 32 }).map((b) => Buffer.from(b).toString("base64")),
        nastyString,
      );
    return fc.oneof(jsonNumber, numericString);
  }

  private messageValue(desc: DescMessage, depth: number): fc.Arbitrary<JsonValue> {
    if (this.opts.wellTyped) {
      switch (desc.typeName) {
        case `${WKT}Timestamp`:
          return fc
            .date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true })
            .map((d) => d.toISOString());
        case `${WKT}Duration`:
          return fc.integer({ min: 0, max: 100_000 }).map((n) => `${n}s`);
        case `${WKT}FieldMask`:
          return fc.subarray(["name", "description"]).map((p) => p.join(","));
        default:
          break;
      }
    }
    switch (desc.typeName) {
      case `${WKT}Timestamp`:
        return fc.oneof(
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
          fc.constantFrom(
            "2024-01-01T00:00:00Z",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59.999999999Z",
            "10000-01-01T00:00:00Z",
            "0000-01-01T00:00:00Z",
            "2024-13-45T99:99:99Z",
            "2024-01-01T00:00:00+25:00",
            "2024-01-01",
            "now",
            "",
          ),
          nastyString,
        );
      case `${WKT}Duration`:
        return fc.oneof(
          fc.constantFrom(
            "3600s",
            "0s",
            "-1s",
            "1.5s",
            "0.000000001s",
            "315576000000s",
            "315576000001s",
            "99999999999999999999s",
            "1s1",
            "s",
            "",
            "1.0000000001s",
            "-0s",
            "1e3s",
          ),
          nastyString,
        );
      case `${WKT}FieldMask`:
        return fc.oneof(
          fc
            .array(
              fc.oneof(
                nastyString,
                fc.constantFrom("name", "description", "uid", "*", "claim_match.issuer", "oidc.client_secret", "create_time"),
              ),
              { maxLength: 4 },
            )
            .map((p) => p.join(",")),
          anyJson,
        );
      case `${WKT}Struct`:
        return fc.dictionary(
          fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("id", "modified", "aliases", "affected", "\u0000", "__proto__")),
          anyJson,
          { maxKeys: 5 },
        );
      case `${WKT}Value`:
        return anyJson;
      case `${WKT}ListValue`:
        return fc.array(anyJson, { maxLength: 4 });
      case `${WKT}Empty`:
        return fc.constant({});
      default:
        if (desc.typeName.startsWith(WKT) && desc.typeName.endsWith("Value"))
          return fc.oneof(jsonNumber, numericString, nastyString, fc.boolean());
        return fc.oneof({ weight: 4, arbitrary: this.message(desc, depth + 1) }, { weight: 1, arbitrary: fc.constant(null) });
    }
  }
}

/**
 * Init objects for `create(desc, init)` (Connect-ES clients): every value
 * fits its proto type, so the client encodes it; the content is hostile.
 */
export class InitFromDescriptor {
  private readonly cache = new Map<string, fc.Arbitrary<Record<string, unknown>>>();

  constructor(private readonly opts: DescriptorArbitraryOptions) {}

  message(desc: DescMessage, depth = 0): fc.Arbitrary<Record<string, unknown>> {
    const key = `${desc.typeName}@${depth}`;
    let arb = this.cache.get(key);
    if (!arb) {
      arb = this.build(desc, depth);
      this.cache.set(key, arb);
    }
    return arb;
  }

  private build(desc: DescMessage, depth: number): fc.Arbitrary<Record<string, unknown>> {
    if (depth > this.opts.maxDepth) return fc.constant({});
    const plain = desc.fields
      .filter((f) => !f.oneof)
      .map((f) =>
        fc
          .option(this.field(f, depth), { freq: 2, nil: undefined })
          .map((v) => (v === undefined ? undefined : ([f.localName, v] as const))),
      );
    const oneofs = desc.oneofs.map((o) =>
      fc
        .option(fc.oneof(...o.fields.map((f) => this.single(f, depth).map((value) => ({ case: f.localName, value })))), {
          freq: 2,
          nil: undefined,
        })
        .map((v) => (v === undefined ? undefined : ([o.localName, v] as const))),
    );
    return fc.tuple(fc.tuple(...plain), fc.tuple(...oneofs)).map(([a, b]) => {
      const out: Record<string, unknown> = {};
      for (const e of [...a, ...b]) if (e) out[e[0]] = e[1];
      return out;
    });
  }

  private field(f: DescField, depth: number): fc.Arbitrary<unknown> {
    switch (f.fieldKind) {
      case "list": {
        const element =
          f.listKind === "message"
            ? this.messageValue(f.message, depth)
            : f.listKind === "enum"
              ? enumNumbers(f.enum)
              : this.scalar(f.scalar, f.longAsString);
        return longOrShort(element);
      }
      case "map": {
        const value =
          f.mapKind === "message"
            ? this.messageValue(f.message, depth)
            : f.mapKind === "enum"
              ? enumNumbers(f.enum)
              : this.scalar(f.mapKind === "scalar" ? f.scalar : ScalarType.STRING, false);
        const keys = this.mapKey(f.mapKey);
        return fc.dictionary(keys, value, { maxKeys: 3 });
      }
      default:
        return this.single(f, depth);
    }
  }

  private single(f: DescField, depth: number): fc.Arbitrary<unknown> {
    switch (f.fieldKind) {
      case "enum":
        return enumNumbers(f.enum);
      case "message":
        return this.messageValue(f.message, depth);
      case "scalar":
        return this.scalar(f.scalar, f.longAsString);
      default:
        return this.field(f, depth);
    }
  }

  private mapKey(t: ScalarType): fc.Arbitrary<string> {
    if (t === ScalarType.STRING) return fc.oneof(this.opts.strings, fc.constantFrom("clusters", "idps", "repositories"));
    if (t === ScalarType.BOOL) return fc.constantFrom("true", "false");
    if (isInt64(t) || isUint64(t) || isInt32(t) || isUint32(t)) return fc.integer({ min: 0, max: 2 ** 31 - 1 }).map(String);
    return fc.constant("0");
  }

  private scalar(t: ScalarType, longAsString: boolean): fc.Arbitrary<unknown> {
    if (t === ScalarType.STRING) return this.opts.strings;
    if (t === ScalarType.BOOL) return fc.boolean();
    if (t === ScalarType.BYTES) return fc.uint8Array({ maxLength: 64 });
    if (t === ScalarType.DOUBLE) return fc.double();
    if (t === ScalarType.FLOAT) return fc.float();
    if (isInt32(t)) return fc.oneof(fc.integer(), fc.constantFrom(-1, 0, -(2 ** 31), 2 ** 31 - 1));
    if (isUint32(t)) return fc.oneof(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.constantFrom(0, 2 ** 32 - 1));
    const big = isInt64(t) ? fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }) : fc.bigInt({ min: 0n, max: 2n ** 64n - 1n });
    return longAsString ? big.map(String) : big;
  }

  private messageValue(desc: DescMessage, depth: number): fc.Arbitrary<unknown> {
    switch (desc.typeName) {
      case `${WKT}Struct`:
        return fc.dictionary(
          fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom("id", "modified", "aliases", "affected", "\u0000")),
          anyJson,
          { maxKeys: 5 },
        );
      case `${WKT}Value`:
        return anyJson;
      case `${WKT}ListValue`:
        return fc.array(anyJson, { maxLength: 4 });
      default:
        return this.message(desc, depth + 1);
    }
  }
}

// ---------------------------------------------------------------------------
// Credentials.

const b64url = (s: string) => Buffer.from(s).toString("base64url");

/** Header-safe garbage: printable ASCII, and Latin-1 bytes. */
const headerSafe = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength: 40,
  }),
);

export interface TokenContext {
  admin: string;
  /** Other genuine tokens: another audience, an identity that does not exist, ... */
  others: readonly string[];
  /** Issuers a forged token may name (never a public host). */
  issuers: readonly string[];
  /** Subjects a forged token may name. */
  subjects: readonly string[];
}

/** JWT-shaped strings: random headers and claims, unsigned or wrongly signed. */
export function forgedJwt(ctx: TokenContext): fc.Arbitrary<string> {
  const header = fc.oneof(
    fc.constantFrom(
      { alg: "none" },
      { alg: "ES256", kid: "nope" },
      { alg: "HS256" },
      { alg: "RS256", jku: "http://127.0.0.1:9/keys" },
      { alg: "ES256", kid: "../../etc/passwd" },
    ),
    anyJson,
  );
  const claims = fc.oneof(
    fc.record({
      iss: fc.oneof(
        fc.constantFrom(...ctx.issuers),
        nastyString.filter((s) => s.length < 200),
      ),
      sub: fc.oneof(
        fc.constantFrom(...ctx.subjects),
        nastyString.filter((s) => s.length < 200),
      ),
      aud: fc.oneof(fc.constantFrom(...ctx.issuers), fc.array(fc.string({ maxLength: 10 }), { maxLength: 2 })),
      exp: fc.oneof(fc.integer(), fc.constant(4_102_444_800), numericString),
      iat: fc.oneof(fc.integer(), fc.constant(0)),
    }),
    anyJson,
  );
  const signature = fc.oneof(
    fc.constant(""),
    fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString("base64url")),
    headerSafe,
  );
  return fc
    .tuple(header, claims, signature)
    .map(([h, c, s]) => `${b64url(JSON.stringify(h) ?? "null")}.${b64url(JSON.stringify(c) ?? "null")}.${s}`);
}

/** A tampered genuine token: a character changed, truncated, doubled, or a part swapped. */
function tampered(token: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc
      .tuple(fc.nat({ max: Math.max(0, token.length - 1) }), fc.constantFrom("A", "_", "-", ".", "="))
      .map(([i, c]) => token.slice(0, i) + c + token.slice(i + 1)),
    fc.nat({ max: token.length }).map((i) => token.slice(0, i)),
    fc.constant(`${token}.${token}`),
    fc.constant(token.split(".").reverse().join(".")),
    fc.constant(`${token.split(".").slice(0, 2).join(".")}.`),
  );
}

/** The whole Authorization header value, or undefined for none: mostly the admin's, sometimes anything. */
export function authorizationHeader(ctx: TokenContext): fc.Arbitrary<string | undefined> {
  const bearer = (t: fc.Arbitrary<string>) => t.map((v) => `Bearer ${v}`);
  return fc.oneof(
    { weight: 24, arbitrary: fc.constant(`Bearer ${ctx.admin}`) },
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: bearer(fc.constantFrom(...ctx.others)) },
    { weight: 1, arbitrary: bearer(forgedJwt(ctx)) },
    { weight: 1, arbitrary: bearer(tampered(ctx.admin)) },
    { weight: 1, arbitrary: bearer(headerSafe) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        "Bearer",
        "Bearer ",
        `bearer ${ctx.admin}`,
        "Basic YWRtaW46YWRtaW4=",
        `Bearer  ${ctx.admin}`,
        `Bearer ${ctx.admin} x`,
        "Token x",
        "",
      ),
    },
    { weight: 1, arbitrary: headerSafe },
  );
}
