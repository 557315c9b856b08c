import { fromJson, type DescField, type DescMessage, type JsonValue, type Registry } from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";
import type { FieldLookup } from "./field-lookup.js";
import { describeExpected, elementType, parseText } from "./field-values.js";
import { isJsonObject } from "./json-object.js";

// fromJson says that a body is wrong but not where in the caller's terms.
// When it fails (and only then: this is the slow path), this walks the JSON
// beside the schema and names the first offending field as the caller wrote
// it: `group.name`, `items[2].kind`, `labels.env`.

export interface Violation {
  readonly field: string;
  readonly description: string;
}

export interface DiagnosisContext {
  readonly lookup: FieldLookup;
  readonly registry: Registry | undefined;
}

// Deeper than protojson's own recursion limit is an error anyway.
const MAX_DEPTH = 100;

function joinPath(prefix: string, key: string): string {
  return prefix === "" ? key : `${prefix}.${key}`;
}

/**
 * The first violation in `json` read as a `desc` message, or undefined when
 * each field decodes on its own (the failure is then about their combination,
 * such as two members of one oneof).
 */
export function diagnoseMessage(desc: DescMessage, json: JsonValue, path: string, ctx: DiagnosisContext, depth = 0): Violation | undefined {
  const here = path === "" ? "body" : path;
  if (depth > MAX_DEPTH) return { field: here, description: "is nested too deeply" };
  if (hasCustomJsonRepresentation(desc)) {
    return decodes(desc, json, ctx) ? undefined : { field: here, description: describeExpected({ kind: "message", message: desc }) };
  }
  if (!isJsonObject(json)) return { field: here, description: "must be a JSON object" };
  for (const [key, value] of Object.entries(json)) {
    const at = joinPath(path, key);
    const field = ctx.lookup.find(desc, key);
    if (field === undefined) return { field: at, description: `is not a field of ${desc.typeName}` };
    if (value === null) continue; // null means "not set" for every field kind
    const v = diagnoseField(desc, field, key, value, at, ctx, depth);
    if (v !== undefined) return v;
  }
  return undefined;
}

function diagnoseField(
  desc: DescMessage,
  field: DescField,
  key: string,
  value: JsonValue,
  at: string,
  ctx: DiagnosisContext,
  depth: number,
): Violation | undefined {
  const single = (v: JsonValue): boolean => decodes(desc, { [key]: v }, ctx);
  switch (field.fieldKind) {
    case "message":
      return diagnoseMessage(field.message, value, at, ctx, depth + 1);
    case "list": {
      if (!Array.isArray(value)) return { field: at, description: "must be a JSON array" };
      for (let i = 0; i < value.length; i++) {
        const element = value[i] ?? null;
        const elementAt = `${at}[${i}]`;
        if (field.listKind === "message") {
          const v = diagnoseMessage(field.message, element, elementAt, ctx, depth + 1);
          if (v !== undefined) return v;
        } else if (!single([element])) {
          return { field: elementAt, description: describeExpected(elementType(field)) };
        }
      }
      return undefined;
    }
    case "map": {
      if (!isJsonObject(value)) return { field: at, description: "must be a JSON object" };
      for (const [k, entry] of Object.entries(value)) {
        const entryAt = `${at}.${k}`;
        const keyType = { kind: "scalar", scalar: field.mapKey, longAsString: false } as const;
        if (!parseText(keyType, k).ok) return { field: entryAt, description: `has an invalid key: ${describeExpected(keyType)}` };
        if (field.mapKind === "message") {
          const v = diagnoseMessage(field.message, entry, entryAt, ctx, depth + 1);
          if (v !== undefined) return v;
        } else if (!single({ [k]: entry })) {
          return { field: entryAt, description: describeExpected(elementType(field)) };
        }
      }
      return undefined;
    }
    case "scalar":
    case "enum":
      return single(value) ? undefined : { field: at, description: describeExpected(elementType(field)) };
  }
}

function decodes(desc: DescMessage, json: JsonValue, ctx: DiagnosisContext): boolean {
  try {
    fromJson(desc, json, { registry: ctx.registry });
    return true;
  } catch {
    return false;
  }
}
