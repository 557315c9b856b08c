import { create, fromJson, type DescField, type DescMessage, type JsonValue, type Message, type Registry } from "@bufbuild/protobuf";
import { reflect, type ReflectMessage } from "@bufbuild/protobuf/reflect";
import { FieldMaskSchema, hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "../errors/index.js";
import type { CapturedValue } from "./http-rule.js";
import type { FieldLookup } from "./field-lookup.js";
import { elementType, parseText, type FieldValue } from "./field-values.js";
import { diagnoseMessage, type DiagnosisContext, type Violation } from "./json-diagnosis.js";
import { isJsonObject } from "./json-object.js";
import type { Route } from "./route-table.js";
import { implicitMaskPaths } from "./implied-update-mask.js";
import { dropUnusedOneofMembers } from "./oneof-members.js";

export interface BindingInput {
  readonly route: Route;
  readonly captures: readonly CapturedValue[];
  /** The raw query string, without `?`. */
  readonly query: string;
  /** The request body; undefined when the route takes none. */
  readonly body: Uint8Array | undefined;
}

interface QueryTarget {
  readonly fields: readonly DescField[];
  readonly protoPath: string;
}

/** Resolved query parameter names kept per request type; past this many (a recursive type's endless paths), resolved each time. */
const MAX_KEPT_PARAMS = 64;

/**
 * Builds the request message of a matched route from the path captures, the
 * query string and the JSON body. Every problem with the caller's input is
 * an INVALID_ARGUMENT naming the field as the caller wrote it.
 */
export class RequestBinder {
  private readonly utf8 = new TextDecoder("utf-8", { fatal: true });
  private readonly diagnosis: DiagnosisContext;
  /** Query parameter names already resolved, per request type: a List's page_size and scope are resolved once. */
  private readonly targets = new Map<DescMessage, Map<string, QueryTarget>>();

  constructor(
    private readonly lookup: FieldLookup,
    private readonly registry: Registry | undefined,
  ) {
    this.diagnosis = { lookup, registry };
  }

  bind(input: BindingInput): Message {
    const { route } = input;
    const schema = route.method.input;
    const bodyJson = route.body.kind === "none" ? undefined : this.parseBody(input.body);
    const message = this.decodeBody(route, bodyJson);
    const root = reflect(schema, message);

    for (let i = 0; i < input.captures.length; i++) {
      const capture = input.captures[i];
      const binding = route.pathBindings[i];
      if (capture === undefined || binding === undefined) continue;
      if (capture.value === undefined) throw invalidArgument(binding.jsonPath, "is not valid percent-encoded UTF-8");
      const parsed = parseText(binding.leaf, capture.value);
      if (!parsed.ok) throw invalidArgument(binding.jsonPath, parsed.description);
      // The path wins over anything the body said about the same field.
      assign(root, binding.fields, parsed.value);
    }

    const maskGiven = input.query === "" ? false : this.bindQuery(route, root, input.query);

    const mask = route.updateMask;
    if (mask !== undefined && !maskGiven) {
      const paths = isJsonObject(bodyJson) ? implicitMaskPaths(mask.bodyField.message, bodyJson, this.lookup) : [];
      root.set(mask.maskField, reflect(FieldMaskSchema, create(FieldMaskSchema, { paths })));
    }
    return message;
  }

  /** Undefined for an empty body: the body field stays unset. */
  private parseBody(body: Uint8Array | undefined): JsonValue | undefined {
    if (body === undefined || body.byteLength === 0) return undefined;
    let text: string;
    try {
      text = this.utf8.decode(body);
    } catch {
      throw invalidArgument("body", "is not valid UTF-8");
    }
    if (text.trim() === "") return undefined;
    try {
      return JSON.parse(text) as JsonValue;
    } catch (e) {
      throw invalidArgument("body", `is not valid JSON: ${errorText(e)}`);
    }
  }

  private decodeBody(route: Route, bodyJson: JsonValue | undefined): Message {
    const schema = route.method.input;
    const body = route.body;
    if (body.kind === "none" || bodyJson === undefined) return create(schema);
    if (body.kind === "all") {
      if (!isJsonObject(bodyJson)) throw invalidArgument("body", "must be a JSON object");
      const json = dropUnusedOneofMembers(schema, bodyJson, "", this.lookup);
      return this.decode(schema, json, () => diagnoseMessage(schema, json, "", this.diagnosis));
    }
    const field = body.field;
    const json = field.fieldKind === "message" ? dropUnusedOneofMembers(field.message, bodyJson, field.jsonName, this.lookup) : bodyJson;
    return this.decode(schema, { [field.jsonName]: json }, () =>
      field.fieldKind === "message"
        ? diagnoseMessage(field.message, json, field.jsonName, this.diagnosis)
        : diagnoseMessage(schema, { [field.jsonName]: bodyJson }, "", this.diagnosis),
    );
  }

  private decode(schema: DescMessage, json: JsonValue, diagnose: () => Violation | undefined): Message {
    try {
      return fromJson(schema, json, { registry: this.registry });
    } catch (e) {
      const v = diagnose() ?? { field: "body", description: `is not a valid ${schema.typeName}: ${errorText(e)}` };
      throw invalidArgument(v.field, v.description);
    }
  }

  /** Sets every query parameter; returns whether the caller gave the update mask. */
  private bindQuery(route: Route, root: ReflectMessage, query: string): boolean {
    let maskGiven = false;
    const seen = new Set<string>();
    for (const [name, text] of new URLSearchParams(query)) {
      if (route.body.kind === "all") throw invalidArgument(name, "is not allowed: this method reads every field from the body");
      const target = this.target(route.method.input, name);
      const bound = route.boundPaths.find((b) => target.protoPath === b.path || target.protoPath.startsWith(`${b.path}.`));
      if (bound !== undefined) {
        throw invalidArgument(name, bound.by === "path" ? "is set by the URL path" : "is set by the request body");
      }
      const leaf = target.fields[target.fields.length - 1] as DescField;
      if (leaf.fieldKind !== "list") {
        if (seen.has(target.protoPath)) throw invalidArgument(name, "is given more than once");
        seen.add(target.protoPath);
      }
      const parsed = parseText(elementType(leaf), text);
      if (!parsed.ok) throw invalidArgument(name, parsed.description);
      assign(root, target.fields, parsed.value);
      if (target.fields.length === 1 && leaf === route.updateMask?.maskField) maskGiven = true;
    }
    return maskGiven;
  }

  /** resolveParam, remembered (a name that does not resolve throws each time). */
  private target(schema: DescMessage, name: string): QueryTarget {
    let kept = this.targets.get(schema);
    if (kept === undefined) {
      kept = new Map();
      this.targets.set(schema, kept);
    }
    let target = kept.get(name);
    if (target === undefined) {
      target = this.resolveParam(schema, name);
      if (kept.size < MAX_KEPT_PARAMS) kept.set(name, target);
    }
    return target;
  }

  /** `uidp.descendants_of`, `uidp.descendantsOf`, `pageSize`, ... → the fields they name. */
  private resolveParam(schema: DescMessage, name: string): QueryTarget {
    const fields: DescField[] = [];
    let message: DescMessage = schema;
    const segments = name.split(".");
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i] ?? "";
      const field = this.lookup.find(message, segment);
      if (field === undefined) {
        throw invalidArgument(name, `is not a known query parameter: ${message.typeName} has no field "${segment}"`);
      }
      fields.push(field);
      const last = i === segments.length - 1;
      if (field.fieldKind === "map") throw invalidArgument(name, "is a map, which cannot be set in the query string");
      if (field.fieldKind === "list" && field.listKind === "message" && !hasCustomJsonRepresentation(field.message)) {
        throw invalidArgument(name, "is a list of messages, which cannot be set in the query string");
      }
      if (field.fieldKind === "message" && !hasCustomJsonRepresentation(field.message)) {
        if (last)
          throw invalidArgument(name, `is a message: set its fields instead, e.g. ${name}.${field.message.fields[0]?.jsonName ?? "field"}`);
        message = field.message;
        continue;
      }
      if (!last) throw invalidArgument(name, `is not a known query parameter: ${field.jsonName} has no fields`);
    }
    return { fields, protoPath: fields.map((f) => f.name).join(".") };
  }
}

/** Sets (or, for a list, appends) a value at a field path, creating the messages on the way. */
function assign(root: ReflectMessage, fields: readonly DescField[], value: FieldValue): void {
  let r = root;
  for (let i = 0; i < fields.length - 1; i++) {
    const f = fields[i];
    if (f?.fieldKind !== "message") throw new Error("field path goes through a non-message field");
    const sub = r.get(f);
    if (!r.isSet(f)) r.set(f, sub);
    r = sub;
  }
  const leaf = fields[fields.length - 1];
  if (leaf === undefined) return;
  const v = isMessageValue(value) ? reflect(messageTypeOf(leaf), value) : value;
  if (leaf.fieldKind === "list") {
    r.get(leaf).add(v);
  } else {
    r.set(leaf, v);
  }
}

function isMessageValue(v: FieldValue): v is Message {
  return typeof v === "object" && !(v instanceof Uint8Array);
}

function messageTypeOf(field: DescField): DescMessage {
  if (field.message === undefined) throw new Error(`${field.name} is not a message field`);
  return field.message;
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
