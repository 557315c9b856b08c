import { ScalarType, toJson, type DescField, type DescMessage, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation, TimestampSchema, type Timestamp } from "@bufbuild/protobuf/wkt";

// The JsonRenderer's compiled writers (docs/design.md, "JSON rendering"): for messages made only
// of the common field kinds, the answer's JSON object is written in one pass, straight from the
// message, instead of protojson's object and then a second pass adding the nulls and the
// milliseconds. Each writer gives exactly what the renderer's general path gives (the same
// keys in the same order, the same values: json-compiled.spec.ts compares them); anything it
// was not made for it hands back as BAIL, and the general path renders the whole answer.

export const BAIL: unique symbol = Symbol("bail");
type Out = JsonValue | typeof BAIL;

/** A message's writer: its JSON object with the renderer's nulls and milliseconds, or BAIL. */
export type CompiledWriter = (message: unknown) => JsonObject | typeof BAIL;

/** What the renderer's plan says about a message: its fields in declaration order, and which render null when absent. */
export interface NullOrder {
  readonly order: readonly string[];
  readonly nullable: ReadonlySet<string>;
}

const TIMESTAMP = "google.protobuf.Timestamp";
const NULL_VALUE = "google.protobuf.NullValue";
/** protobuf-es's bounds of a Timestamp in JSON: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z. */
const TIMESTAMP_MS_MIN = Date.parse("0001-01-01T00:00:00Z");
const TIMESTAMP_MS_MAX = Date.parse("9999-12-31T23:59:59Z");
// DescField.presence: proto2 `required` fields have their own error in protojson.
const LEGACY_REQUIRED = 3;
const IMPLICIT = 2;

type ValueWriter = (value: unknown) => Out;
type FieldWriter = (message: Record<string, unknown>, json: JsonObject) => boolean;

/**
 * Compiles writers on first use; `undefined` for a message they do not cover (oneofs, bytes,
 * well-known types other than a singular Timestamp, …), which the general path renders.
 */
export class CompiledWriters {
  private readonly writers = new Map<string, CompiledWriter | undefined>();

  constructor(private readonly nullOrder: (desc: DescMessage) => NullOrder) {}

  writerFor(desc: DescMessage): CompiledWriter | undefined {
    // Well-known types with a JSON form of their own (Timestamp, Struct, Any, wrappers…) are protojson's.
    if (hasCustomJsonRepresentation(desc)) return undefined;
    if (this.writers.has(desc.typeName)) return this.writers.get(desc.typeName);
    // Registered before its fields are compiled, so that a recursive type finds itself.
    let compiled: CompiledWriter | undefined;
    this.writers.set(desc.typeName, (m) => (compiled ? compiled(m) : BAIL));
    compiled = this.compile(desc);
    this.writers.set(desc.typeName, compiled);
    return compiled;
  }

  private compile(desc: DescMessage): CompiledWriter | undefined {
    // protojson writes fields in field-number order.
    const fields = desc.fields.concat().sort((a, b) => a.number - b.number);
    const writers: FieldWriter[] = [];
    for (const f of fields) {
      const w = this.field(f);
      if (!w) return undefined;
      writers.push(w);
    }
    const typeName = desc.typeName;
    const { order, nullable } = this.nullOrder(desc);
    const nullables = [...nullable];
    return (message) => {
      const m = message as Record<string, unknown> & { $typeName?: string; $unknown?: unknown[] };
      // Another type's message, or unknown fields (extensions): the general path's errors and extensions.
      if (m.$typeName !== typeName || (m.$unknown !== undefined && m.$unknown.length > 0)) return BAIL;
      const json: JsonObject = {};
      for (let i = 0; i < writers.length; i++) if (!writers[i]!(m, json)) return BAIL;
      for (let i = 0; i < nullables.length; i++) {
        if (!Object.hasOwn(json, nullables[i]!)) return withNulls(order, nullable, json);
      }
      return json;
    };
  }

  private field(f: DescField): FieldWriter | undefined {
    if (f.oneof !== undefined || f.jsonName === "__proto__" || f.name === "__proto__") return undefined;
    const key = f.jsonName;
    const local = f.localName;
    switch (f.fieldKind) {
      case "scalar":
      case "enum":
      case "message": {
        if (f.presence === LEGACY_REQUIRED) return undefined;
        const write =
          f.fieldKind === "scalar"
            ? scalarWriter(f.scalar)
            : f.fieldKind === "enum"
              ? enumWriter(f.enum.typeName, f.enum.value)
              : f.message.typeName === TIMESTAMP
                ? singularTimestamp
                : this.messageWriter(f.message);
        if (!write) return undefined;
        if (f.presence === IMPLICIT) {
          // Every implicit field is emitted (alwaysEmitImplicit).
          return (m, json) => {
            const v = write(m[local]);
            if (v === BAIL) return false;
            json[key] = v;
            return true;
          };
        }
        // Explicit presence: emitted when set (an own property that is not undefined).
        return (m, json) => {
          const value = m[local];
          if (value === undefined || !Object.hasOwn(m, local)) return true;
          const v = write(value);
          if (v === BAIL) return false;
          json[key] = v;
          return true;
        };
      }
      case "list": {
        const item =
          f.listKind === "scalar"
            ? scalarWriter(f.scalar)
            : f.listKind === "enum"
              ? enumWriter(f.enum.typeName, f.enum.value)
              : this.messageWriter(f.message);
        if (!item) return undefined;
        return (m, json) => {
          const items = m[local];
          if (!Array.isArray(items)) return false;
          const out: JsonValue[] = new Array(items.length);
          for (let i = 0; i < items.length; i++) {
            const v = item(items[i]);
            if (v === BAIL) return false;
            out[i] = v;
          }
          json[key] = out;
          return true;
        };
      }
      case "map": {
        const value =
          f.mapKind === "scalar"
            ? scalarWriter(f.scalar)
            : f.mapKind === "enum"
              ? enumWriter(f.enum.typeName, f.enum.value)
              : this.messageWriter(f.message);
        if (!value) return undefined;
        return (m, json) => {
          const record = m[local];
          if (record === null || typeof record !== "object") return false;
          const out: JsonObject = {};
          for (const k of Object.keys(record)) {
            // protojson defines such a key as an own property; left to it.
            if (k === "__proto__") return false;
            const v = value((record as Record<string, unknown>)[k]);
            if (v === BAIL) return false;
            out[k] = v;
          }
          json[key] = out;
          return true;
        };
      }
      default:
        return undefined;
    }
  }

  /** A plain message (one whose JSON is an object of its fields), compiled; none for well-known types. */
  private messageWriter(desc: DescMessage): ValueWriter | undefined {
    return this.writerFor(desc);
  }
}

/** `obj` rebuilt in declaration order with `null` for the absent nullable fields, as JsonRenderer's withNulls. */
export function withNulls(order: readonly string[], nullable: ReadonlySet<string>, obj: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const name of order) {
    const value = Object.hasOwn(obj, name) ? obj[name] : undefined;
    if (value !== undefined) out[name] = value;
    else if (nullable.has(name)) out[name] = null;
  }
  // Anything protojson wrote that is not a declared field (extensions) goes at the end.
  for (const [k, v] of Object.entries(obj)) if (!Object.hasOwn(out, k)) out[k] = v;
  return out;
}

// protojson drops the fraction of a whole second ("…:56Z"); the API always
// shows milliseconds ("…:56.000Z", docs/design.md, "JSON rendering").
export function withMilliseconds(ts: string): string {
  return ts.endsWith("Z") && !ts.includes(".") ? `${ts.slice(0, -1)}.000Z` : ts;
}

/**
 * A singular Timestamp as the renderer shows it. At millisecond precision (every stored time)
 * that is the instant's toISOString() (isoMillis); anything else (finer, out of range, malformed) goes
 * through protojson, whose errors stay its own.
 */
function singularTimestamp(value: unknown): Out {
  const t = value as Timestamp;
  if (t.$typeName === TIMESTAMP && typeof t.seconds === "bigint" && typeof t.nanos === "number" && t.nanos % 1_000_000 === 0) {
    const ms = Number(t.seconds) * 1000;
    if (ms >= TIMESTAMP_MS_MIN && ms <= TIMESTAMP_MS_MAX && t.nanos >= 0 && t.nanos <= 999_000_000) {
      return isoMillis(ms + t.nanos / 1_000_000);
    }
  }
  if (t.$typeName !== TIMESTAMP) return BAIL;
  const json = toJson(TimestampSchema, t);
  return typeof json === "string" ? withMilliseconds(json) : BAIL;
}

const MS_PER_DAY = 86_400_000;
const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

/**
 * `new Date(ms).toISOString()` for an instant in years 1 to 9999, in integer arithmetic: a
 * third of the time of the native one, which a page of 50 groups calls 100 times. The civil
 * date is Howard Hinnant's days-to-civil algorithm (proleptic Gregorian, as Date's).
 */
export function isoMillis(ms: number): string {
  const days = Math.floor(ms / MS_PER_DAY);
  let rest = ms - days * MS_PER_DAY;
  const z = days + 719_468; // days since 0000-03-01
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1000);
  const milli = rest - second * 1000;
  const y = year < 10 ? `000${year}` : year < 100 ? `00${year}` : year < 1000 ? `0${year}` : `${year}`;
  const frac = milli < 10 ? `00${milli}` : milli < 100 ? `0${milli}` : `${milli}`;
  return `${y}-${pad2(month)}-${pad2(day)}T${pad2(hour)}:${pad2(minute)}:${pad2(second)}.${frac}Z`;
}

function scalarWriter(type: ScalarType): ValueWriter | undefined {
  switch (type) {
    case ScalarType.STRING:
      return (v) => (typeof v === "string" ? v : BAIL);
    case ScalarType.BOOL:
      return (v) => (typeof v === "boolean" ? v : BAIL);
    case ScalarType.INT32:
    case ScalarType.SFIXED32:
    case ScalarType.SINT32:
    case ScalarType.FIXED32:
    case ScalarType.UINT32:
      return (v) => (typeof v === "number" ? v : BAIL);
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
    case ScalarType.SINT64:
      return (v) =>
        typeof v === "bigint" || typeof v === "string" || (typeof v === "number" && Number.isInteger(v)) ? v.toString() : BAIL;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v) => {
        if (typeof v !== "number") return BAIL;
        if (Number.isNaN(v)) return "NaN";
        if (v === Number.POSITIVE_INFINITY) return "Infinity";
        if (v === Number.NEGATIVE_INFINITY) return "-Infinity";
        return v;
      };
    default:
      // bytes: left to protojson.
      return undefined;
  }
}

function enumWriter(typeName: string, values: Record<number, { jsonName: string } | undefined>): ValueWriter {
  if (typeName === NULL_VALUE) return (v) => (typeof v === "number" ? null : BAIL);
  // A number the enum does not name is written as the number, as protojson does.
  return (v) => (typeof v === "number" ? (values[v]?.jsonName ?? v) : BAIL);
}
