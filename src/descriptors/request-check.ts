import { getOption, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { UidKind as UidKindOption, uid_kind } from "../../gen/platform/common/v1/uid_kind_pb.js";
import { uidProblem, type UidKind } from "../db/uid.js";
import { invalidArgument } from "../errors/index.js";
import { standardMethodOf } from "./standard-method.js";

/**
 * The one input check every request passes before authorization or storage
 * (docs/security.md, "Input"): no string anywhere in a request may carry a
 * NUL or an unpaired surrogate (PostgreSQL cannot store the first, UTF-8
 * cannot encode the second), every uid-bearing field must have the shape
 * of a uid the service makes (no longer or deeper than one: src/db/uid.ts),
 * and no repeated or map field may hold more than MAX_REPEATED entries. Runs
 * on every protocol (REST reaches the implementations through the same
 * interceptors).
 */

// A NUL, a high surrogate not followed by a low one, or a low one not preceded by a high one.
const BAD_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** NUL and unpaired surrogates are INVALID_ARGUMENT naming `field`. */
export function checkText(value: string, field: string): void {
  if (BAD_TEXT.test(value)) throw invalidArgument(field, "must be valid text: no NUL characters or unpaired surrogates");
}

// The shapes of src/db/uid.ts, by the kind a field declares.
const UID_KINDS: Record<UidKindOption, UidKind | "any" | undefined> = {
  [UidKindOption.UNSPECIFIED]: undefined,
  [UidKindOption.GROUP]: "group",
  [UidKindOption.CHILD]: "child",
  [UidKindOption.ROLE]: "role",
  [UidKindOption.IDENTITY]: "identity",
  [UidKindOption.ROOT_ROLE_BINDING]: "rootRoleBinding",
  [UidKindOption.ADVISORY]: "advisory",
  [UidKindOption.ANY]: "any",
};

/** The kind of uid a string field holds (`option (platform.common.v1.uid_kind)`), or undefined for a field that holds none. */
export function uidKindOf(field: DescField): UidKind | "any" | undefined {
  return UID_KINDS[getOption(field, uid_kind)];
}

function checkUid(value: string, kind: UidKind | "any", field: string): void {
  const problem = uidProblem(value, kind);
  if (problem) throw invalidArgument(field, problem);
}

const MAX_DEPTH = 32;

/**
 * The most entries any repeated or map field of a request may hold
 * (docs/security.md, "Input"), checked before its entries are: services
 * set lower caps of their own where a field needs one (a batch of role
 * bindings, uidp.ids, a repo's aliases).
 */
export const MAX_REPEATED = 1000;
/** The longest key of a map field (resource_limits, client_ids). */
export const MAX_MAP_KEY_LENGTH = 256;

function checkCount(n: number, path: string): void {
  if (n > MAX_REPEATED) throw invalidArgument(path, `must have at most ${MAX_REPEATED} entries`);
}

// google.protobuf.Timestamp and Duration: the ranges their definitions allow
// (years 0001 to 9999; ±10,000 years), so no conversion downstream overflows.
const MIN_TIMESTAMP_SECONDS = -62_135_596_800n;
const MAX_TIMESTAMP_SECONDS = 253_402_300_799n;
const MAX_DURATION_SECONDS = 315_576_000_000n;
const MAX_NANOS = 999_999_999;

function checkTime(typeName: string, value: unknown, path: string): void {
  const { seconds, nanos } = value as { seconds?: bigint; nanos?: number };
  if (typeof seconds !== "bigint" || typeof nanos !== "number") return;
  if (typeName === "google.protobuf.Timestamp") {
    if (seconds < MIN_TIMESTAMP_SECONDS || seconds > MAX_TIMESTAMP_SECONDS || nanos < 0 || nanos > MAX_NANOS) {
      throw invalidArgument(path, "must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z");
    }
  } else if (
    seconds < -MAX_DURATION_SECONDS ||
    seconds > MAX_DURATION_SECONDS ||
    Math.abs(nanos) > MAX_NANOS ||
    (seconds > 0n && nanos < 0) ||
    (seconds < 0n && nanos > 0)
  ) {
    throw invalidArgument(path, "must be a duration of at most ±315576000000s");
  }
}

const TIME_TYPES = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration"]);
const JSON_TYPES = new Set(["google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"]);

function checkJson(value: unknown, path: string, depth: number): void {
  if (depth > MAX_DEPTH) throw invalidArgument(path, `is nested more than ${MAX_DEPTH} levels deep`);
  if (typeof value === "string") checkText(value, path);
  else if (Array.isArray(value)) {
    // A JSON list or object is a repeated field too: the same cap, before its entries are looked at.
    checkCount(value.length, path);
    value.forEach((v, i) => {
      checkJson(v, `${path}[${i}]`, depth + 1);
    });
  } else if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    checkCount(entries.length, path);
    for (const [k, v] of entries) {
      checkText(k, path);
      checkJson(v, `${path}.${k}`, depth + 1);
    }
  }
}

function fieldValue(message: Record<string, unknown>, field: DescField): unknown {
  if (!field.oneof) return message[field.localName];
  const chosen = message[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return chosen?.case === field.localName ? chosen.value : undefined;
}

interface Walk {
  /** A create ignores its body's identifier (the uid) as well. */
  creating: boolean;
}

/** What the walk needs to know of a field, read from its descriptor once (options are decoded on every read). */
interface FieldFacts {
  uidKind: UidKind | "any" | undefined;
  outputOnly: boolean;
  identifier: boolean;
}

const facts = new WeakMap<DescField, FieldFacts>();

function factsOf(field: DescField): FieldFacts {
  let f = facts.get(field);
  if (!f) {
    const behaviors = getOption(field, field_behavior);
    f = {
      uidKind: uidKindOf(field),
      outputOnly: behaviors.includes(FieldBehavior.OUTPUT_ONLY),
      identifier: behaviors.includes(FieldBehavior.IDENTIFIER),
    };
    facts.set(field, f);
  }
  return f;
}

function checkString(walk: Walk, field: DescField, value: unknown, path: string, depth: number): void {
  if (typeof value !== "string" || value === "") return;
  checkText(value, path);
  const f = factsOf(field);
  // What a write ignores is not checked for shape (only for text): output-only
  // fields of a body, and its identifier on create.
  const ignored = depth > 0 && (f.outputOnly || (walk.creating && f.identifier));
  if (f.uidKind && !ignored) checkUid(value, f.uidKind, path);
}

function checkValue(walk: Walk, field: DescField, value: unknown, path: string, depth: number): void {
  const nested = field.message;
  if (nested && JSON_TYPES.has(nested.typeName)) checkJson(value, path, depth + 1);
  else if (nested && TIME_TYPES.has(nested.typeName)) checkTime(nested.typeName, value, path);
  else if (nested) {
    if (value !== null && typeof value === "object") walkMessage(walk, nested, value as Record<string, unknown>, path, depth + 1);
  } else checkString(walk, field, value, path, depth);
}

// Errors name a resource's own fields relative to it (`role_uid`, not
// `role_binding.role_uid`), as the services do; shared request parts keep
// their names (`uidp.descendants_of`).
function isResourceBody(field: DescField): boolean {
  const type = field.message?.typeName ?? "";
  return field.fieldKind === "message" && !type.startsWith("google.") && !type.startsWith("platform.common.");
}

function walkMessage(walk: Walk, desc: DescMessage, message: Record<string, unknown>, prefix: string, depth: number): void {
  if (depth > MAX_DEPTH) throw invalidArgument(prefix || "request", `is nested more than ${MAX_DEPTH} levels deep`);
  for (const field of desc.fields) {
    const value = fieldValue(message, field);
    if (value === undefined || value === null) continue;
    const path = depth === 0 && isResourceBody(field) ? "" : prefix ? `${prefix}.${field.name}` : field.name;
    if (field.fieldKind === "list") {
      checkCount((value as unknown[]).length, path);
      (value as unknown[]).forEach((item, i) => {
        checkValue(walk, field, item, `${path}[${i}]`, depth);
      });
    } else if (field.fieldKind === "map") {
      const entries = Object.entries(value as Record<string, unknown>);
      checkCount(entries.length, path);
      for (const [key, item] of entries) {
        checkText(key, path);
        if (key.length > MAX_MAP_KEY_LENGTH) throw invalidArgument(path, `keys must be at most ${MAX_MAP_KEY_LENGTH} characters`);
        checkValue(walk, field, item, `${path}[${key}]`, depth);
      }
    } else {
      checkValue(walk, field, value, path, depth);
    }
  }
}

/** Checks every string of a request (recursively); throws INVALID_ARGUMENT naming the first bad field. */
export function checkRequest(method: DescMethod, message: Record<string, unknown>): void {
  const standard = standardMethodOf(method);
  walkMessage({ creating: standard === "Create" || standard === "BatchCreate" }, method.input, message, "", 0);
}
