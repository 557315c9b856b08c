import {
  create,
  fromJson,
  protoInt64,
  ScalarType,
  type DescEnum,
  type DescField,
  type DescMessage,
  type Message,
} from "@bufbuild/protobuf";
import { protoSnakeCase, reflect } from "@bufbuild/protobuf/reflect";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { FieldMaskSchema, isWrapperDesc } from "@bufbuild/protobuf/wkt";

// URL text (path captures and query parameters) → protobuf field values,
// plus the human description of what a field accepts, shared with the JSON
// body diagnostics so that every INVALID_ARGUMENT reads the same.

/** The type of one value of a field: the field itself, a list element, or a map value. */
export type ElementType =
  | { readonly kind: "scalar"; readonly scalar: ScalarType; readonly longAsString: boolean }
  | { readonly kind: "enum"; readonly enum: DescEnum }
  | { readonly kind: "message"; readonly message: DescMessage };

export function elementType(field: DescField): ElementType {
  switch (field.fieldKind) {
    case "scalar":
      return { kind: "scalar", scalar: field.scalar, longAsString: field.longAsString };
    case "enum":
      return { kind: "enum", enum: field.enum };
    case "message":
      return { kind: "message", message: field.message };
    case "list":
      if (field.listKind === "scalar") return { kind: "scalar", scalar: field.scalar, longAsString: field.longAsString };
      if (field.listKind === "enum") return { kind: "enum", enum: field.enum };
      return { kind: "message", message: field.message };
    case "map":
      if (field.mapKind === "scalar") return { kind: "scalar", scalar: field.scalar, longAsString: false };
      if (field.mapKind === "enum") return { kind: "enum", enum: field.enum };
      return { kind: "message", message: field.message };
  }
}

export type FieldValue = string | number | bigint | boolean | Uint8Array | Message;

export type Parsed = { readonly ok: true; readonly value: FieldValue } | { readonly ok: false; readonly description: string };

const INTEGER = /^[-+]?[0-9]+$/;
const DECIMAL = /^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/;
const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const FLOAT32_MAX = 3.4028234663852886e38;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT64_MAX = 2n ** 64n - 1n;

/** Parses URL text for one value of the given type. */
export function parseText(type: ElementType, text: string): Parsed {
  switch (type.kind) {
    case "scalar":
      return parseScalar(type.scalar, type.longAsString, text);
    case "enum":
      return parseEnum(type.enum, text);
    case "message":
      return parseMessage(type.message, text);
  }
}

function ok(value: FieldValue): Parsed {
  return { ok: true, value };
}

function bad(type: ElementType): Parsed {
  return { ok: false, description: describeExpected(type) };
}

function parseScalar(scalar: ScalarType, longAsString: boolean, text: string): Parsed {
  const type: ElementType = { kind: "scalar", scalar, longAsString };
  switch (scalar) {
    case ScalarType.STRING:
      return ok(text);
    case ScalarType.BOOL:
      if (text === "true") return ok(true);
      if (text === "false") return ok(false);
      return bad(type);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return parseInt32(text, -0x80000000, 0x7fffffff, type);
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return parseInt32(text, 0, 0xffffffff, type);
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return parseInt64(text, INT64_MIN, INT64_MAX, longAsString, type);
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return parseInt64(text, 0n, UINT64_MAX, longAsString, type);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = parseFloatText(text);
      if (n === undefined) return bad(type);
      if (scalar === ScalarType.FLOAT && Number.isFinite(n) && Math.abs(n) > FLOAT32_MAX) return bad(type);
      return ok(n);
    }
    case ScalarType.BYTES:
      if (!BASE64.test(text)) return bad(type);
      return ok(base64Decode(text));
  }
}

function parseInt32(text: string, min: number, max: number, type: ElementType): Parsed {
  if (!INTEGER.test(text)) return bad(type);
  const n = Number(text);
  if (n < min || n > max) return bad(type);
  return ok(n);
}

function parseInt64(text: string, min: bigint, max: bigint, longAsString: boolean, type: ElementType): Parsed {
  if (!INTEGER.test(text)) return bad(type);
  const n = BigInt(text);
  if (n < min || n > max) return bad(type);
  return ok(longAsString ? n.toString() : min < 0n ? protoInt64.parse(n) : protoInt64.uParse(n));
}

function parseFloatText(text: string): number | undefined {
  if (text === "NaN") return NaN;
  if (text === "Infinity") return Infinity;
  if (text === "-Infinity") return -Infinity;
  return DECIMAL.test(text) ? Number(text) : undefined;
}

function parseEnum(desc: DescEnum, text: string): Parsed {
  const byName = desc.values.find((v) => v.name === text);
  if (byName !== undefined) return ok(byName.number);
  if (INTEGER.test(text)) {
    const n = Number(text);
    // Open (proto3) enums keep unknown numbers; closed ones only take declared values.
    if (n >= -0x80000000 && n <= 0x7fffffff && (desc.open || desc.values.some((v) => v.number === n))) return ok(n);
  }
  return bad({ kind: "enum", enum: desc });
}

function parseMessage(desc: DescMessage, text: string): Parsed {
  switch (desc.typeName) {
    case "google.protobuf.FieldMask": {
      const paths = parseFieldMaskText(text);
      if (paths === undefined) return bad({ kind: "message", message: desc });
      const mask = create(FieldMaskSchema, { paths });
      return ok(mask);
    }
    case "google.protobuf.Timestamp":
    case "google.protobuf.Duration":
      try {
        return ok(fromJson(desc, text));
      } catch {
        return bad({ kind: "message", message: desc });
      }
  }
  if (isWrapperDesc(desc)) {
    const inner = desc.fields[0];
    const parsed = parseScalar(inner.scalar, inner.longAsString, text);
    if (!parsed.ok) return parsed;
    const wrapper = create(desc);
    reflect(desc, wrapper).set(inner, parsed.value);
    return ok(wrapper);
  }
  return { ok: false, description: `cannot be set from URL text (${desc.typeName})` };
}

/**
 * `name,description` or `claim_match.issuer,claimMatch.subject`: JSON or
 * proto names, turned into proto names; `*` passes through for the service
 * to interpret. Undefined for an empty entry such as `a,,b`.
 */
export function parseFieldMaskText(text: string): string[] | undefined {
  if (text.trim() === "") return [];
  const paths: string[] = [];
  for (const entry of text.split(",")) {
    const path = entry.trim();
    if (path === "") return undefined;
    paths.push(
      path
        .split(".")
        .map((segment) => (hasUpperCase(segment) ? protoSnakeCase(segment) : segment))
        .join("."),
    );
  }
  return paths;
}

function hasUpperCase(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

/** What a value of the type must look like, as the description of a field violation. */
export function describeExpected(type: ElementType): string {
  switch (type.kind) {
    case "scalar":
      return describeScalar(type.scalar);
    case "enum": {
      const names = type.enum.values.map((v) => v.name);
      const list = names.length <= 12 ? `: ${names.join(", ")}` : "";
      return `must be a value of ${type.enum.name} (name or number)${list}`;
    }
    case "message":
      return describeMessage(type.message);
  }
}

function describeScalar(scalar: ScalarType): string {
  switch (scalar) {
    case ScalarType.STRING:
      return "must be a string";
    case ScalarType.BOOL:
      return "must be a boolean (true or false)";
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return "must be a 32-bit integer";
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return "must be an unsigned 32-bit integer";
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return "must be a 64-bit integer";
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return "must be an unsigned 64-bit integer";
    case ScalarType.DOUBLE:
      return "must be a number";
    case ScalarType.FLOAT:
      return "must be a 32-bit floating-point number";
    case ScalarType.BYTES:
      return "must be base64-encoded bytes";
  }
}

function describeMessage(desc: DescMessage): string {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return "must be an RFC 3339 timestamp such as 2024-01-02T15:04:05Z";
    case "google.protobuf.Duration":
      return "must be a duration in seconds with an s suffix, such as 1.5s";
    case "google.protobuf.FieldMask":
      return "must be a comma-separated list of field paths";
    case "google.protobuf.Struct":
      return "must be a JSON object";
    case "google.protobuf.ListValue":
      return "must be a JSON array";
    case "google.protobuf.Value":
      return "must be a JSON value";
    case "google.protobuf.Any":
      return "must be a JSON object with a known @type";
  }
  if (isWrapperDesc(desc)) {
    const inner = desc.fields[0];
    return describeScalar(inner.scalar);
  }
  return "must be a JSON object";
}
