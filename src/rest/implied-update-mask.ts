import type { DescMessage, JsonObject } from "@bufbuild/protobuf";
import { hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";
import { isOutputOnly } from "../fieldmask/index.js";
import type { FieldLookup } from "./field-lookup.js";
import { isJsonObject } from "./json-object.js";

/**
 * The update mask a PATCH body implies when the caller gives none
 * (docs/design.md, "Writes"): every field present in the JSON, even when empty or false, as proto
 * names. A non-empty object for a plain message field contributes its leaves
 * (`claim_match.issuer`); an empty one, a map, a list, a well-known type or
 * null contributes the field's own path. Output-only fields contribute nothing.
 *
 * Runs after the body decoded, so every key is a known field and the nesting
 * is within protojson's recursion limit.
 */
export function implicitMaskPaths(desc: DescMessage, body: JsonObject, lookup: FieldLookup): string[] {
  const paths = new Set<string>();
  collect(desc, body, "", lookup, paths);
  return [...paths];
}

function collect(desc: DescMessage, obj: JsonObject, prefix: string, lookup: FieldLookup, out: Set<string>): void {
  for (const [key, value] of Object.entries(obj)) {
    const field = lookup.find(desc, key);
    // Output-only fields echoed from a GET are ignored, not refused (AIP-203).
    if (field === undefined || isOutputOnly(field)) continue;
    const path = prefix === "" ? field.name : `${prefix}.${field.name}`;
    if (
      field.fieldKind === "message" &&
      !hasCustomJsonRepresentation(field.message) &&
      isJsonObject(value) &&
      Object.keys(value).length > 0
    ) {
      collect(field.message, value, path, lookup, out);
    } else {
      out.add(path);
    }
  }
}
