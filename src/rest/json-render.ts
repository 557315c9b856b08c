import { toJson, type DescField, type DescMessage, type JsonObject, type JsonValue, type Message, type Registry } from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";
import { BAIL, CompiledWriters, withMilliseconds, withNulls } from "./json-compiled.js";
import { isJsonObject } from "./json-object.js";

// Success bodies: protojson with every implicit field emitted, plus what
// protobuf-es does not do: an unset singular message field (Timestamp
// included) renders as `null`, at every depth, so that callers see the
// full shape of a resource. proto3 `optional` and oneof members stay
// omitted when unset: their absence is the information.

interface PlanEntry {
  readonly jsonName: string;
  /** Render `null` when absent. */
  readonly nullable: boolean;
  /** Plain message type to descend into (singular, list element or map value); undefined for WKTs. */
  readonly child: DescMessage | undefined;
  readonly container: "single" | "list" | "map";
  /** A singular google.protobuf.Timestamp: always rendered with milliseconds. */
  readonly timestamp: boolean;
}

interface NullPlan {
  readonly entries: readonly PlanEntry[];
  /** Every field's JSON name in declaration order, to rebuild an object with the nulls in place. */
  readonly order: readonly string[];
  readonly nullable: ReadonlySet<string>;
}

const EMPTY = "google.protobuf.Empty";
const TIMESTAMP = "google.protobuf.Timestamp";

export class JsonRenderer {
  private readonly plans = new Map<string, NullPlan>();
  private readonly compiled: CompiledWriters | undefined;

  /** `compiled: false` renders everything the general way (tests compare the two). */
  constructor(
    private readonly registry: Registry | undefined,
    opts: { compiled?: boolean } = {},
  ) {
    this.compiled = opts.compiled === false ? undefined : new CompiledWriters((desc) => this.planFor(desc));
  }

  /** The JSON for a response message; `field` selects a response_body field. */
  render(schema: DescMessage, message: Message, field?: DescField): JsonValue {
    if (schema.typeName === EMPTY) return {};
    // Most answers: one pass from the message (json-compiled.ts); the rest, protojson then fill.
    const written = this.compiled?.writerFor(schema)?.(message) ?? BAIL;
    const filled = written !== BAIL ? written : this.general(schema, message);
    if (field === undefined) return filled;
    return (isJsonObject(filled) ? own(filled, field.jsonName) : undefined) ?? null;
  }

  private general(schema: DescMessage, message: Message): JsonValue {
    const json = toJson(schema, message, { alwaysEmitImplicit: true, registry: this.registry });
    return isJsonObject(json) ? this.fill(schema, json) : json;
  }

  /** Adds the nulls for `desc` to `obj` (a protojson object of that type); may return a new object. */
  fill(desc: DescMessage, obj: JsonObject): JsonObject {
    const plan = this.planFor(desc);
    if (plan.entries.length === 0) return obj;
    let missing = false;
    for (const e of plan.entries) {
      const value = own(obj, e.jsonName);
      if (value === undefined) {
        if (e.nullable) missing = true;
        continue;
      }
      if (e.timestamp && typeof value === "string") obj[e.jsonName] = withMilliseconds(value);
      if (e.child === undefined || value === null) continue;
      const child = e.child;
      if (e.container === "single") {
        if (isJsonObject(value)) obj[e.jsonName] = this.fill(child, value);
      } else if (e.container === "list") {
        if (Array.isArray(value)) {
          for (let i = 0; i < value.length; i++) {
            const item = value[i];
            if (isJsonObject(item)) value[i] = this.fill(child, item);
          }
        }
      } else if (isJsonObject(value)) {
        for (const [k, item] of Object.entries(value)) {
          if (isJsonObject(item)) value[k] = this.fill(child, item);
        }
      }
    }
    return missing ? withNulls(plan.order, plan.nullable, obj) : obj;
  }

  private planFor(desc: DescMessage): NullPlan {
    let plan = this.plans.get(desc.typeName);
    if (plan === undefined) {
      plan = buildPlan(desc);
      this.plans.set(desc.typeName, plan);
    }
    return plan;
  }
}

function buildPlan(desc: DescMessage): NullPlan {
  const entries: PlanEntry[] = [];
  for (const f of desc.fields) {
    switch (f.fieldKind) {
      case "message": {
        // Oneof members and proto3 `optional` keep protojson's omission.
        const nullable = f.oneof === undefined && !f.proto.proto3Optional;
        const timestamp = f.message.typeName === TIMESTAMP;
        entries.push({ jsonName: f.jsonName, nullable, child: plainMessage(f.message), container: "single", timestamp });
        break;
      }
      case "list":
        if (f.listKind === "message" && plainMessage(f.message) !== undefined) {
          entries.push({ jsonName: f.jsonName, nullable: false, child: f.message, container: "list", timestamp: false });
        }
        break;
      case "map":
        if (f.mapKind === "message" && plainMessage(f.message) !== undefined) {
          entries.push({ jsonName: f.jsonName, nullable: false, child: f.message, container: "map", timestamp: false });
        }
        break;
      default:
        break;
    }
  }
  const nullable = new Set(entries.filter((e) => e.nullable).map((e) => e.jsonName));
  return { entries, order: desc.fields.map((f) => f.jsonName), nullable };
}

/** Messages whose JSON is an object of their fields; WKTs with their own JSON form are leaves. */
function plainMessage(desc: DescMessage): DescMessage | undefined {
  return hasCustomJsonRepresentation(desc) ? undefined : desc;
}

// Own properties only: a field named like an Object.prototype member must not read the prototype.
function own(obj: JsonObject, key: string): JsonValue | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}
