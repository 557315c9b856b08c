import type { DescMessage, JsonObject, JsonValue } from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";
import { invalidArgument } from "../errors/index.js";
import type { FieldLookup } from "./field-lookup.js";
import { isJsonObject } from "./json-object.js";

// Deeper than protojson's own recursion limit: what is below is left to it.
const MAX_DEPTH = 100;

/** JSON that says "not this member": null, "", 0, false, an empty list or object. */
function isUnused(v: JsonValue): boolean {
  if (v === null || v === "" || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  return false;
}

/**
 * A body whose oneof members not in use are given as empty values next to the
 * one in use (`"issuer": "x", "issuerPattern": ""`, as a client that writes
 * every field sends them) decodes as if they were absent: protojson would
 * refuse the oneof as set twice (docs/design.md, "Claim match"). Two members
 * with values are INVALID_ARGUMENT on the second, named as the caller wrote
 * it. Returns `json` itself when nothing is dropped.
 */
export function dropUnusedOneofMembers(desc: DescMessage, json: JsonValue, path: string, lookup: FieldLookup, depth = 0): JsonValue {
  if (depth > MAX_DEPTH || !isJsonObject(json) || hasCustomJsonRepresentation(desc)) return json;
  let out: JsonObject | undefined;
  const used = new Map<string, string>(); // oneof name → the key of its member in use
  const given = new Map<string, string[]>(); // oneof name → keys of its members
  for (const [key, value] of Object.entries(json)) {
    const field = lookup.find(desc, key);
    if (field === undefined) continue; // the decoder names unknown fields
    const at = path === "" ? key : `${path}.${key}`;
    if (field.oneof !== undefined) {
      given.set(field.oneof.name, [...(given.get(field.oneof.name) ?? []), key]);
      if (field.fieldKind === "scalar" || field.fieldKind === "enum" ? !isUnused(value) : value !== null) {
        const first = used.get(field.oneof.name);
        if (first !== undefined)
          throw invalidArgument(at, `cannot be given with ${first}: they are alternatives (one of ${field.oneof.name})`);
        used.set(field.oneof.name, key);
      }
    }
    if (field.fieldKind === "message" && isJsonObject(value)) {
      const inner = dropUnusedOneofMembers(field.message, value, at, lookup, depth + 1);
      if (inner !== value) (out ??= { ...json })[key] = inner;
    } else if (field.fieldKind === "list" && field.listKind === "message" && Array.isArray(value)) {
      const items = value.map((v, i) => dropUnusedOneofMembers(field.message, v, `${at}[${i}]`, lookup, depth + 1));
      if (items.some((v, i) => v !== value[i])) (out ??= { ...json })[key] = items;
    }
  }
  for (const [oneof, keys] of given) {
    if (keys.length < 2) continue;
    for (const key of keys) if (key !== used.get(oneof)) delete (out ??= { ...json })[key];
  }
  return out ?? json;
}
