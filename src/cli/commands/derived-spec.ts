import { getOption, hasOption, ScalarType, type DescField, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import { FieldBehavior, field_behavior } from "../../../gen/google/api/field_behavior_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import { standardMethodOf } from "../../descriptors/index.js";
import { parsePathTemplate, type PathTemplate } from "../../rest/http-rule.js";
import { col, type Column } from "../output.js";
import type { CommandContext } from "../context.js";
import type { JsonObject } from "../api-client.js";
import type { FieldFlag, FilterFlag, ResourceSpec } from "./resource.js";

// A resource's CLI commands worked out from what the protos already say: its
// standard methods (src/descriptors/standard-method.ts) and their
// google.api.http rules (collection path, parent in the create path) and its messages (list key, filters, writable
// fields and their types). What the protos cannot say (nicer descriptions,
// flag names kept from before, columns) comes from a ResourceOverride.

const PAGING = new Set(["page_size", "page_token", "order_by", "skip"]);
// Options every command has or the program takes: a field flag must not shadow them.
const RESERVED = new Set(["name", "help", "api", "output", "version"]);

interface Rule {
  verb: "get" | "post" | "patch" | "delete" | "put";
  template: PathTemplate;
  body: string;
}

// The HTTP verb of each standard method on one item (`<path>/<uid>`).
const ITEM_VERBS = { Get: "get", Update: "patch", Delete: "delete" } as const satisfies Record<string, Rule["verb"]>;

function rulesOf(method: DescMethod): Rule[] {
  if (method.methodKind !== "unary" || !hasOption(method, http)) return [];
  const rule = getOption(method, http);
  return [rule, ...rule.additionalBindings].flatMap((r: HttpRule): Rule[] => {
    const p = r.pattern;
    if (p.case !== "get" && p.case !== "post" && p.case !== "patch" && p.case !== "delete" && p.case !== "put") return [];
    return [{ verb: p.case, template: parsePathTemplate(p.value), body: r.body }];
  });
}

const literalPath = (t: PathTemplate) =>
  t.segments.every((s) => s.kind === "literal") ? `/${t.segments.map((s) => (s.kind === "literal" ? s.value : "")).join("/")}` : undefined;

const behaviors = (f: DescField) => getOption(f, field_behavior);
const isOutputOnly = (f: DescField) => behaviors(f).includes(FieldBehavior.OUTPUT_ONLY) || behaviors(f).includes(FieldBehavior.IDENTIFIER);
const isRequired = (f: DescField) => behaviors(f).includes(FieldBehavior.REQUIRED);

const kebab = (protoName: string) => protoName.replace(/_/g, "-");
const words = (camel: string) => camel.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();

/** `identities` → `identity`, `aliases` → `alias`, `repos` → `repo`: good enough for API plurals. */
export function singular(word: string): string {
  if (/ies$/.test(word)) return word.replace(/ies$/, "y");
  if (/(ss|x|ch|sh|us|ias)es$/.test(word)) return word.slice(0, -2);
  if (/[^s]s$/.test(word)) return word.slice(0, -1);
  return word;
}
const singularLast = (flag: string) => flag.replace(/[a-z0-9]+$/, singular);

const INTEGER = new Set([
  ScalarType.INT32,
  ScalarType.INT64,
  ScalarType.UINT32,
  ScalarType.UINT64,
  ScalarType.SINT32,
  ScalarType.SINT64,
  ScalarType.FIXED32,
  ScalarType.FIXED64,
  ScalarType.SFIXED32,
  ScalarType.SFIXED64,
]);

/** Well-known types a flag can carry as one JSON string. */
const STRING_WKT: Record<string, string> = { "google.protobuf.Timestamp": "<time>", "google.protobuf.FieldMask": "<paths>" };

/** The flag kind of a field that is not a nested message, or undefined when no flag can set it. */
function flagKind(f: DescField): { kind: NonNullable<FieldFlag["kind"]>; arg?: string } | undefined {
  switch (f.fieldKind) {
    case "scalar":
      return f.scalar === ScalarType.BOOL ? { kind: "bool" } : { kind: "string", arg: /_uid$|^uid$/.test(f.name) ? "<uid>" : undefined };
    case "enum":
      return { kind: "string" };
    case "list":
      if (f.listKind === "scalar" && f.scalar === ScalarType.STRING) return { kind: "list" };
      if (f.listKind === "enum") return { kind: "list" };
      if (f.listKind === "scalar" && INTEGER.has(f.scalar)) return { kind: "int-list", arg: "<n>" };
      return undefined;
    case "map":
      if (f.mapKind === "scalar" && f.scalar === ScalarType.STRING) return { kind: "map" };
      if (f.mapKind === "scalar" && INTEGER.has(f.scalar)) return { kind: "int-map", arg: "<key=n>" };
      return undefined;
    case "message":
      if (f.message.typeName === "google.protobuf.Duration") return { kind: "duration", arg: "<duration>" };
      if (f.message.typeName in STRING_WKT) return { kind: "string", arg: STRING_WKT[f.message.typeName] };
      return undefined;
  }
}

interface Candidate {
  /** The fields from the body down to the leaf. */
  fields: DescField[];
  kind: NonNullable<FieldFlag["kind"]>;
  arg?: string;
  required: boolean;
}

/** Every leaf a flag can set, depth first in declaration order; nested messages (not well-known types) are walked into. */
function leaves(fields: readonly DescField[], prefix: DescField[], required: boolean, seen: Set<DescMessage>): Candidate[] {
  const out: Candidate[] = [];
  for (const f of fields) {
    if (isOutputOnly(f)) continue;
    const k = flagKind(f);
    if (k) out.push({ fields: [...prefix, f], ...k, required: required && isRequired(f) });
    else if (f.fieldKind === "message" && !f.message.typeName.startsWith("google.protobuf.") && !seen.has(f.message)) {
      // A nested field is required only when every message above it is: an optional sub-message may be left out whole.
      out.push(...leaves(f.message.fields, [...prefix, f], required && isRequired(f), new Set([...seen, f.message])));
    }
  }
  return out;
}

/**
 * Flags for writable fields. A top-level field's flag is its name in kebab case;
 * a nested field's is its own name (`claimMatch.issuer` → `--issuer`) unless
 * that clashes with another flag, then the whole path (`--claim-match-issuer`).
 * Repeatable flags take one value each, so their names are singular.
 */
function flagsOf(candidates: Candidate[], taken: Set<string>): FieldFlag[] {
  const own = (c: Candidate) => {
    const base = kebab(c.fields[c.fields.length - 1]!.name);
    return c.kind === "list" || c.kind === "int-list" || c.kind === "map" || c.kind === "int-map" ? singularLast(base) : base;
  };
  const full = (c: Candidate) => [...c.fields.slice(0, -1).map((f) => kebab(f.name)), own(c)].join("-");
  const top = new Set(candidates.filter((c) => c.fields.length === 1).map(own));
  const counts = new Map<string, number>();
  for (const c of candidates) counts.set(own(c), (counts.get(own(c)) ?? 0) + 1);
  return candidates.map((c) => {
    const short = own(c);
    const clash = c.fields.length > 1 && (counts.get(short)! > 1 || top.has(short) || taken.has(short));
    const path = c.fields.map((f) => f.jsonName).join(".");
    const flag: FieldFlag = { flag: clash ? full(c) : short, path, description: `sets ${path}`, kind: c.kind };
    if (c.arg) flag.arg = c.arg;
    if (c.required) flag.required = true;
    return flag;
  });
}

/** List filters: the request's scalar fields (and timestamps) besides paging, `name` and `uidp`. */
function filtersOf(request: DescMessage): FilterFlag[] {
  return request.fields.flatMap((f): FilterFlag[] => {
    if (PAGING.has(f.name) || f.name === "name" || f.name === "uidp") return [];
    const k = flagKind(f);
    if (!k || (k.kind !== "string" && k.kind !== "bool")) return [];
    const filter: FilterFlag = { flag: kebab(f.name), param: f.name, description: `only those with this ${f.name}` };
    if (k.kind === "bool") filter.kind = "bool";
    if (k.arg) filter.arg = k.arg;
    return [filter];
  });
}

/**
 * A service's resource commands, from its descriptor alone: list, get and the
 * create/update/delete it has. Throws for a service that is not a resource
 * collection (no List and Get rules under one path).
 */
export function deriveResourceSpec(service: DescService): ResourceSpec {
  const where = service.typeName;
  const rules = service.methods.flatMap((method) => rulesOf(method).map((rule) => ({ method, rule })));
  const list = rules.find(
    ({ method, rule }) =>
      standardMethodOf(method) === "List" &&
      rule.verb === "get" &&
      rule.template.variables.length === 0 &&
      !rule.template.verb &&
      method.output.fields.some((f) => f.fieldKind === "list" && f.listKind === "message"),
  );
  if (!list) throw new Error(`${where}: no List method (GET without path variables, answering a repeated message)`);
  const listField = list.method.output.fields.find((f) => f.fieldKind === "list" && f.listKind === "message")!;
  const resource = listField.fieldKind === "list" && listField.listKind === "message" ? listField.message : undefined!;
  const path = literalPath(list.rule.template)!;
  // The other verbs address `<path>/<uid>`, as the commands send them.
  const onItem = (standard: keyof typeof ITEM_VERBS) =>
    rules.find(
      ({ method, rule }) =>
        standardMethodOf(method) === standard &&
        rule.verb === ITEM_VERBS[standard] &&
        !rule.template.verb &&
        rule.template.source.startsWith(`${path}/{`) &&
        (standard === "Delete" || method.output === resource),
    );
  if (!onItem("Get")) throw new Error(`${where}: no Get method (GET ${path}/{uid})`);
  const createRules = rules.filter(
    ({ method, rule }) =>
      standardMethodOf(method) === "Create" &&
      rule.verb === "post" &&
      !rule.template.verb &&
      method.output === resource &&
      rule.template.source.startsWith(path),
  );
  const update = onItem("Update");
  const updateBody = update?.method.input.fields.find((f) => f.name === update.rule.body);

  const parentField = createRules[0]?.method.input.fields.find((f) => f.name === "parent");
  const parentFlag =
    parentField && createRules.some(({ rule }) => rule.template.variables.some((v) => v.fieldPath.join(".") === "parent"))
      ? "parent"
      : undefined;
  const nameField = resource.fields.find((f) => f.name === "name" && f.fieldKind === "scalar" && !isOutputOnly(f));
  const taken = new Set([...RESERVED, ...(parentFlag ? [parentFlag] : [])]);

  // Update's body is the resource message: its writable fields. Create's is
  // the resource message too, or (body "*") the request's own fields.
  const writable = (message: DescMessage, skip: (f: DescField) => boolean, required: boolean) =>
    leaves(
      message.fields.filter((f) => !skip(f)),
      [],
      required,
      new Set([message]),
    );
  const createRule = createRules[0];
  const createBody =
    createRule === undefined
      ? undefined
      : createRule.rule.body === "*"
        ? writable(createRule.method.input, (f) => f.name === "parent" || (nameField !== undefined && f.name === "name"), true)
        : writable(resource, (f) => f === nameField, true);
  const updateFields =
    updateBody?.fieldKind === "message" && updateBody.message === resource ? writable(resource, (f) => f === nameField, true) : undefined;
  // One flag per body path; where create and update both set it, create's says whether it is required.
  const pathOf = (c: Candidate) => c.fields.map((f) => f.jsonName).join(".");
  const unique = new Map([...(updateFields ?? []), ...(createBody ?? [])].map((c) => [pathOf(c), c]));
  const byPath = new Map(flagsOf([...unique.values()], taken).map((f) => [f.path, f]));
  const fields = (updateFields ?? createBody ?? []).map((c) => byPath.get(pathOf(c))!);
  const only = (createBody ?? []).map((c) => byPath.get(pathOf(c))!).filter((f) => !fields.includes(f));

  const request = list.method.input;
  const columns: Column[] = [col("UID", "uid", "text", true)];
  if (resource.fields.some((f) => f.name === "name")) columns.push(col("NAME", "name"));
  if (resource.fields.some((f) => f.name === "create_time")) columns.push(col("CREATED", "createTime", "time"));
  const command = kebab(listField.name);
  const spec: ResourceSpec = {
    command,
    kind: words(listField.jsonName).replace(/[a-z0-9]+$/, singular),
    path,
    listKey: listField.jsonName,
    columns,
    list: {
      scopes: request.fields.some((f) => f.name === "uidp") ? "all" : "none",
      name: request.fields.some((f) => f.name === "name"),
      filters: filtersOf(request),
    },
    fields,
    update: update !== undefined && updateFields !== undefined,
    delete: onItem("Delete") !== undefined,
  };
  if (createRule) {
    spec.create = {};
    if (parentFlag)
      spec.create.parent = { flag: parentFlag, description: `the uid of the ${spec.kind}'s parent`, required: isRequired(parentField!) };
    if (nameField) spec.create.name = isRequired(nameField) ? "required" : "optional";
    if (only.length > 0) spec.create.only = only;
  }
  return spec;
}

/**
 * What the protos cannot say about one resource's commands. Each entry names
 * a flag the derivation made (by body path or query parameter): one it no
 * longer makes is an error, so an override cannot go stale unnoticed.
 */
export interface ResourceOverride {
  command?: string;
  columns?: Column[];
  /** By body path (`claimMatch.issuer`): flag name, description, placeholder. */
  fields?: Record<string, Partial<FieldFlag>>;
  /** Body paths in the order their flags are listed; the rest follow, in proto order. */
  order?: string[];
  parent?: { flag?: string; description?: string; required?: boolean };
  scopes?: ResourceSpec["list"]["scopes"];
  /** By query parameter (`updated_since`). */
  filters?: Record<string, Partial<FilterFlag>>;
  /** Filters on nested request fields, which are not derived (the server may take only some of them). */
  extraFilters?: FilterFlag[];
  /** Table output of the created resource, when not the usual row (an invite's code). */
  print?: (ctx: CommandContext, created: JsonObject) => void;
}

function patched<T extends { flag: string }>(
  items: T[],
  key: (t: T) => string,
  patches: Record<string, Partial<T>> | undefined,
  used: Set<string>,
): T[] {
  return items.map((item) => {
    const patch = patches?.[key(item)];
    if (!patch) return item;
    used.add(key(item));
    return { ...item, ...patch };
  });
}

/** The derived spec with `override` applied. */
export function withOverride(spec: ResourceSpec, override: ResourceOverride | undefined): ResourceSpec {
  if (!override) return spec;
  const usedFields = new Set<string>();
  const usedFilters = new Set<string>();
  const order = override.order ?? [];
  const rank = (f: FieldFlag) => (order.includes(f.path) ? order.indexOf(f.path) : order.length);
  const fields = patched(spec.fields, (f) => f.path, override.fields, usedFields).sort((a, b) => rank(a) - rank(b));
  const out: ResourceSpec = {
    ...spec,
    command: override.command ?? spec.command,
    columns: override.columns ?? spec.columns,
    fields,
    list: {
      ...spec.list,
      scopes: override.scopes ?? spec.list.scopes,
      filters: [...patched(spec.list.filters ?? [], (f) => f.param, override.filters, usedFilters), ...(override.extraFilters ?? [])],
    },
  };
  if (spec.create) {
    out.create = { ...spec.create };
    if (spec.create.only) out.create.only = patched(spec.create.only, (f) => f.path, override.fields, usedFields);
    if (override.parent) {
      if (!spec.create.parent) throw new Error(`${spec.command}: the override names a parent flag, but create takes no parent`);
      out.create.parent = { ...spec.create.parent, ...override.parent };
    }
    if (override.print) out.create.print = override.print;
  } else if (override.parent || override.print) {
    throw new Error(`${spec.command}: the override changes create, which the resource does not have`);
  }
  const stale = [
    ...Object.keys(override.fields ?? {}).filter((k) => !usedFields.has(k)),
    ...order.filter((p) => !spec.fields.some((f) => f.path === p)),
    ...Object.keys(override.filters ?? {}).filter((k) => !usedFilters.has(k)),
  ];
  if (stale.length > 0) throw new Error(`${spec.command}: the override names ${stale.join(", ")}, which the protos no longer give`);
  return out;
}
