import { clone, create, getOption, isFieldSet, clearField, type DescField, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { invalidArgument } from "../errors/index.js";

type AnyMessage = Record<string, unknown>;

// Well-known types are values, not containers: a path may end at them but
// never walk into them.
function isOpaque(desc: DescMessage): boolean {
  return desc.typeName.startsWith("google.protobuf.");
}

function findField(desc: DescMessage, name: string): DescField | undefined {
  return desc.fields.find((f) => f.name === name || f.jsonName === name);
}

/** Fields a caller may never write: OUTPUT_ONLY and IDENTIFIER (google.api.field_behavior). */
export function isOutputOnly(field: DescField): boolean {
  const behaviors = getOption(field, field_behavior);
  return behaviors.includes(FieldBehavior.OUTPUT_ONLY) || behaviors.includes(FieldBehavior.IDENTIFIER);
}

/** The leaf paths (proto names) of the fields set in `msg`, recursing into sub-messages. */
export function setFieldPaths(desc: DescMessage, msg: AnyMessage, prefix = ""): string[] {
  const paths: string[] = [];
  for (const field of desc.fields) {
    if (!isFieldSet(msg as MessageShape<DescMessage>, field)) continue;
    const path = prefix + field.name;
    if (field.fieldKind === "message" && !isOpaque(field.message)) {
      const nested = setFieldPaths(field.message, readField(msg, field) as AnyMessage, `${path}.`);
      paths.push(...(nested.length ? nested : [path]));
    } else {
      paths.push(path);
    }
  }
  return paths;
}

function readField(msg: AnyMessage, field: DescField): unknown {
  if (field.oneof) {
    const oneof = msg[field.oneof.localName] as { case?: string; value?: unknown } | undefined;
    return oneof?.case === field.localName ? oneof.value : undefined;
  }
  return msg[field.localName];
}

function writeField(desc: DescMessage, msg: AnyMessage, field: DescField, from: AnyMessage): void {
  if (isFieldSet(from as MessageShape<DescMessage>, field)) {
    const value = readField(from, field);
    const copy = structuredCloneField(field, value);
    if (field.oneof) msg[field.oneof.localName] = { case: field.localName, value: copy };
    else msg[field.localName] = copy;
  } else {
    clearField(msg as MessageShape<typeof desc>, field);
  }
}

function structuredCloneField(field: DescField, value: unknown): unknown {
  if (field.fieldKind === "message") return clone(field.message, value as MessageShape<DescMessage>);
  if (field.fieldKind === "list") {
    const items = value as unknown[];
    return field.listKind === "message" ? items.map((m) => clone(field.message, m as MessageShape<DescMessage>)) : [...items];
  }
  if (field.fieldKind === "map") {
    const entries = Object.entries(value as Record<string, unknown>);
    return Object.fromEntries(
      field.mapKind === "message" ? entries.map(([k, m]) => [k, clone(field.message, m as MessageShape<DescMessage>)]) : entries,
    );
  }
  return value;
}

/** Resolves a dotted path (proto or JSON names) to the fields along it, or throws INVALID_ARGUMENT. */
function resolvePath(desc: DescMessage, path: string): DescField[] {
  const fields: DescField[] = [];
  let cur: DescMessage | undefined = desc;
  for (const part of path.split(".")) {
    const field: DescField | undefined = cur ? findField(cur, part) : undefined;
    if (!field) throw invalidArgument("update_mask", `unknown field path "${path}"`);
    if (isOutputOnly(field)) throw invalidArgument("update_mask", `field "${path}" is output only`);
    fields.push(field);
    cur = field.fieldKind === "message" && !isOpaque(field.message) ? field.message : undefined;
  }
  return fields;
}

/**
 * Applies an update (AIP-134) and returns the new message:
 * - no mask (or an empty one): every field set in `patch` changes;
 * - a mask: exactly those paths change, set or cleared from `patch`;
 * - `*`: every writable field is replaced.
 * Unknown and output-only paths are INVALID_ARGUMENT on update_mask.
 */
export function applyUpdate<Desc extends DescMessage>(
  desc: Desc,
  current: MessageShape<Desc>,
  patch: MessageShape<Desc>,
  mask: FieldMask | undefined,
): MessageShape<Desc> {
  const result = clone(desc, current) as unknown as AnyMessage;
  const from = patch as unknown as AnyMessage;
  const given = mask?.paths ?? [];
  if (given.length === 1 && given[0] === "*") {
    for (const field of desc.fields) if (!isOutputOnly(field)) writeField(desc, result, field, from);
    return result as unknown as MessageShape<Desc>;
  }
  const paths = given.length ? given : setFieldPaths(desc, from).filter((p) => !isOutputOnlyPath(desc, p));
  for (const path of paths) {
    if (path === "*") throw invalidArgument("update_mask", `"*" must be the only path`);
    const chain = resolvePath(desc, path);
    let target = result;
    let source: AnyMessage | undefined = from;
    let owner: DescMessage = desc;
    for (const field of chain.slice(0, -1)) {
      // resolvePath only walks through singular message fields.
      const sub = field.message!;
      if (!isFieldSet(target as MessageShape<DescMessage>, field)) target[field.localName] = create(sub);
      target = target[field.localName] as AnyMessage;
      source = source ? (readField(source, field) as AnyMessage | undefined) : undefined;
      owner = sub;
    }
    const leaf = chain[chain.length - 1]!;
    writeField(owner, target, leaf, source ?? {});
  }
  return result as unknown as MessageShape<Desc>;
}

// Without a mask, output-only fields that a client echoes back are ignored
// rather than rejected (AIP-203).
function isOutputOnlyPath(desc: DescMessage, path: string): boolean {
  let cur: DescMessage | undefined = desc;
  for (const part of path.split(".")) {
    const field: DescField | undefined = cur ? findField(cur, part) : undefined;
    if (!field) return false;
    if (isOutputOnly(field)) return true;
    cur = field.fieldKind === "message" ? field.message : undefined;
  }
  return false;
}
