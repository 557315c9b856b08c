import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** A JSON object (not null, not an array). */
export function isJsonObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
