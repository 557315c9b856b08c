import { InvalidArgumentError, Option, type Command } from "commander";
import { uidPath, type JsonObject, type JsonValue, type Query } from "../api-client.js";
import { contextOf, type CommandContext } from "../context.js";
import type { CliIo } from "../io.js";
import { parseDuration } from "../duration.js";
import { CliError, EXIT } from "../errors.js";
import { renderTable, type Column } from "../output.js";

/**
 * One REST resource as list/get/create/update/delete sub-commands: the
 * commands map 1:1 to the v2 REST routes, and -o json prints the REST JSON.
 */
export interface ResourceSpec {
  /** The sub-command: `groups`, `role-bindings`. */
  command: string;
  /** For messages: `group`, `role binding`. */
  kind: string;
  /** The collection's REST path: `/iam/v2beta1/groups`. */
  path: string;
  /** The list response's array field: `groups`. */
  listKey: string;
  columns: Column[];
  list: {
    /** `all`: every uidp scope; `ids`: only --id (global resources refuse the rest); `none`: neither (root role bindings). */
    scopes: "all" | "ids" | "none";
    /** Whether the list takes `name` (exact match). */
    name: boolean;
    filters?: FilterFlag[];
  };
  /** The writable fields other than the name: flags of create and of update. */
  fields: FieldFlag[];
  create?: {
    /** The parent flag (`--group <uid>`), sent in the path; none: created in the collection (root role bindings). */
    parent?: { flag: string; description: string; required: boolean };
    /** `create <name>` (required) or `create [name]`; update then takes `--name`. */
    name?: "required" | "optional";
    /** Fields only create sets (a role binding's identity). */
    only?: FieldFlag[];
    /** Table output of the created resource, when not the usual row (an invite's code). */
    print?: (ctx: CommandContext, created: JsonObject) => void;
  };
  /** Whether `update <uid>` exists. */
  update: boolean;
  delete: boolean;
}

/**
 * `an identity`, `a group`: in every kind here a vowel letter is a vowel sound
 * (a kind starting with a "you" sound, like `user`, would need "a"; the help
 * test in cli.spec.ts catches such a slip).
 */
export function withArticle(noun: string): string {
  return `${/^[aeiou]/i.test(noun) ? "an" : "a"} ${noun}`;
}

const NAME_FLAG: FieldFlag = { flag: "name", path: "name", description: "the new name" };

/**
 * A flag that sets one body field. Kinds: `string`; `bool` (`--x`, and
 * `--no-x` on update); `list` (repeatable; replaces the list; `--no-x` on
 * update empties it); `map` / `int-map` (repeatable `key=value`); `int-list`
 * (repeatable whole numbers, sent as strings: int64); `duration` (`24h` →
 * `"86400s"`).
 */
export interface FieldFlag {
  /** Without dashes: `issuer-pattern`. */
  flag: string;
  /** The body path, dotted: `claimMatch.issuerPattern`. */
  path: string;
  description: string;
  kind?: "string" | "bool" | "list" | "map" | "int-map" | "int-list" | "duration";
  /** Placeholder in the help: `<uid>`. */
  arg?: string;
  required?: boolean;
}

/** A list filter sent as a query parameter. */
export interface FilterFlag {
  flag: string;
  /** The query parameter (proto name): `claim_match.issuer`. */
  param: string;
  description: string;
  /** `bool`: a switch sent as `true`. */
  kind?: "string" | "bool";
  arg?: string;
}

function collect(value: string, previous: unknown): string[] {
  return [...(Array.isArray(previous) ? (previous as string[]) : []), value];
}

function wholeNumber(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError("must be a whole number");
  return Number(value);
}

function optionsFor(field: FieldFlag, update: boolean): Option[] {
  const kind = field.kind ?? "string";
  if (kind === "bool") {
    const on = new Option(`--${field.flag}`, field.description);
    return update ? [on, new Option(`--no-${field.flag}`, `unset ${field.flag}`)] : [on];
  }
  const repeatable = kind === "list" || kind === "map" || kind === "int-map" || kind === "int-list";
  const arg = field.arg ?? (kind === "map" || kind === "int-map" ? "<key=value>" : "<value>");
  const main = new Option(`--${field.flag} ${arg}`, `${field.description}${repeatable ? " (repeatable)" : ""}`);
  if (repeatable) main.argParser(collect);
  if (field.required) main.makeOptionMandatory();
  return repeatable && update ? [main, new Option(`--no-${field.flag}`, `empty ${field.flag}`)] : [main];
}

function setPath(body: JsonObject, path: string, value: JsonValue): void {
  const keys = path.split(".");
  let node = body;
  for (const key of keys.slice(0, -1)) {
    const next = node[key];
    node = next && typeof next === "object" && !Array.isArray(next) ? next : (node[key] = {});
  }
  node[keys[keys.length - 1]!] = value;
}

function keyValues(field: FieldFlag, entries: string[], numeric: boolean): JsonObject {
  const out: JsonObject = {};
  for (const entry of entries) {
    const eq = entry.indexOf("=");
    const value = entry.slice(eq + 1);
    if (eq < 1 || (numeric && !/^-?\d+$/.test(value))) {
      throw new CliError(`--${field.flag}: "${entry}" must be key=${numeric ? "<integer>" : "<value>"}`, EXIT.usage);
    }
    out[entry.slice(0, eq)] = numeric ? Number(value) : value;
  }
  return out;
}

function fieldValue(field: FieldFlag, raw: unknown): JsonValue {
  const list = raw === false ? [] : (raw as string[]);
  switch (field.kind ?? "string") {
    case "bool":
      return raw === true;
    case "list":
      return list;
    case "map":
      return keyValues(field, list, false);
    case "int-map":
      return keyValues(field, list, true);
    case "int-list":
      for (const v of list) if (!/^\d+$/.test(v)) throw new CliError(`--${field.flag}: "${v}" must be a whole number`, EXIT.usage);
      return list;
    case "duration":
      return `${parseDuration(String(raw), `--${field.flag}`)}s`;
    default:
      return String(raw);
  }
}

/** The body with exactly the fields whose flags were given (PATCH: the implicit mask does the rest). */
function bodyFrom(cmd: Command, fields: FieldFlag[]): JsonObject {
  const opts = cmd.opts<Record<string, unknown>>();
  const body: JsonObject = {};
  for (const field of fields) {
    const raw = opts[new Option(`--${field.flag}`).attributeName()];
    if (raw !== undefined) setPath(body, field.path, fieldValue(field, raw));
  }
  return body;
}

function showOne(ctx: CommandContext, spec: ResourceSpec, item: JsonObject): void {
  if (ctx.output === "json") ctx.printJson(item);
  else ctx.print(renderTable(spec.columns, [item]));
}

const SCOPES: [flag: string, param: string, what: string][] = [
  ["descendants-of", "uidp.descendants_of", "everything below this group"],
  ["children-of", "uidp.children_of", "what this group (or repo) holds directly"],
  ["ancestors-of", "uidp.ancestors_of", "the groups above this uid"],
  ["in-root", "uidp.in_root", "the whole organization of this root group"],
];

interface ListOptions {
  pageSize?: number;
  pageToken?: string;
  orderBy?: string;
  skip?: number;
  name?: string;
  id?: string[];
  all?: boolean;
}

function listQuery(spec: ResourceSpec, cmd: Command): Query {
  const opts = cmd.opts<ListOptions & Record<string, unknown>>();
  const query: Query = {
    page_size: opts.pageSize?.toString(),
    page_token: opts.pageToken,
    order_by: opts.orderBy,
    skip: opts.skip?.toString(),
    name: opts.name,
    "uidp.ids": opts.id,
  };
  const params = [...(spec.list.scopes === "all" ? SCOPES.map(([flag, param]) => ({ flag, param })) : []), ...(spec.list.filters ?? [])];
  for (const { flag, param } of params) {
    const value = opts[new Option(`--${flag}`).attributeName()];
    if (value !== undefined) query[param] = String(value);
  }
  return query;
}

async function list(spec: ResourceSpec, cmd: Command, io: CliIo): Promise<void> {
  const ctx = await contextOf(cmd, io);
  const client = ctx.client();
  const query = listQuery(spec, cmd);
  const first = await client.request("GET", spec.path, { query });
  let page = first;
  const items = [...((first[spec.listKey] as JsonObject[] | undefined) ?? [])];
  const seen = new Set<string>();
  // --all: follow nextPageToken to the end (a repeated token would loop forever).
  while (
    cmd.opts<ListOptions>().all &&
    typeof page["nextPageToken"] === "string" &&
    page["nextPageToken"] &&
    !seen.has(page["nextPageToken"])
  ) {
    seen.add(page["nextPageToken"]);
    page = await client.request("GET", spec.path, { query: { ...query, page_token: page["nextPageToken"], skip: undefined } });
    items.push(...((page[spec.listKey] as JsonObject[] | undefined) ?? []));
  }
  const next = typeof page["nextPageToken"] === "string" ? page["nextPageToken"] : "";
  if (ctx.output === "json") {
    ctx.printJson(page === first ? first : { ...first, [spec.listKey]: items, nextPageToken: next });
    return;
  }
  ctx.print(renderTable(spec.columns, items));
  if (next) ctx.note(`more: --page-token ${next} (or --all)`);
}

export function addList(group: Command, spec: ResourceSpec, io: CliIo): void {
  const cmd = group
    .command("list")
    .description(`list ${spec.command} (what the caller may list)`)
    .option("--page-size <n>", "results per page (default 50, at most 200)", wholeNumber)
    .option("--page-token <token>", "continue from a previous page")
    .option("--order-by <order>", 'e.g. "name", "create_time desc"')
    .option("--skip <n>", "skip this many results", wholeNumber)
    .option("--all", "follow every page (one table)");
  if (spec.list.name) cmd.option("--name <name>", "exact name");
  if (spec.list.scopes === "all") for (const [flag, , what] of SCOPES) cmd.option(`--${flag} <uid>`, what);
  if (spec.list.scopes !== "none") cmd.option("--id <uid>", "only these uids (repeatable)", collect);
  for (const f of spec.list.filters ?? []) {
    cmd.option(f.kind === "bool" ? `--${f.flag}` : `--${f.flag} ${f.arg ?? "<value>"}`, f.description);
  }
  cmd.action(async (_opts: object, self: Command) => list(spec, self, io));
}

function addCreate(group: Command, spec: ResourceSpec, create: NonNullable<ResourceSpec["create"]>, io: CliIo): void {
  const positional = create.name === "required" ? " <name>" : create.name === "optional" ? " [name]" : "";
  const cmd = group.command(`create${positional}`).description(`create ${withArticle(spec.kind)}`);
  const parent = create.parent && new Option(`--${create.parent.flag} <uid>`, create.parent.description);
  if (parent && create.parent?.required) parent.makeOptionMandatory();
  if (parent) cmd.addOption(parent);
  const fields = [...(create.only ?? []), ...spec.fields];
  for (const field of fields) for (const o of optionsFor(field, false)) cmd.addOption(o);
  cmd.action(async (...args: unknown[]) => {
    const self = args[args.length - 1] as Command;
    const ctx = await contextOf(self, io);
    const body = bodyFrom(self, fields);
    const name = self.processedArgs[0] as string | undefined;
    if (name !== undefined) body["name"] = name;
    const parentUid = parent && self.opts<Record<string, string | undefined>>()[parent.attributeName()];
    const created = await ctx.client().request("POST", parentUid ? `${spec.path}/${uidPath(parentUid)}` : spec.path, { body });
    if (ctx.output === "table" && create.print) create.print(ctx, created);
    else showOne(ctx, spec, created);
  });
}

function addUpdate(group: Command, spec: ResourceSpec, io: CliIo): void {
  const fields = spec.create?.name ? [NAME_FLAG, ...spec.fields] : spec.fields;
  const cmd = group.command("update <uid>").description(`change ${withArticle(spec.kind)}: only the fields whose flags are given`);
  for (const field of fields) for (const o of optionsFor({ ...field, required: false }, true)) cmd.addOption(o);
  cmd.action(async (uid: string, _opts: object, self: Command) => {
    const ctx = await contextOf(self, io);
    const body = bodyFrom(self, fields);
    if (Object.keys(body).length === 0) {
      throw new CliError(`nothing to update: give at least one of ${fields.map((f) => `--${f.flag}`).join(", ")}`, EXIT.usage);
    }
    showOne(ctx, spec, await ctx.client().request("PATCH", `${spec.path}/${uidPath(uid)}`, { body }));
  });
}

/** Adds `<command> list|get|create|update|delete` under `parent`. */
export function registerResource(parent: Command, spec: ResourceSpec, io: CliIo): Command {
  const group = parent.command(spec.command).description(`${spec.command}: ${spec.path}`);
  addResourceCommands(group, spec, io);
  return group;
}

/** Adds `list|get|create|update|delete` (those the resource has) to `group`. */
export function addResourceCommands(group: Command, spec: ResourceSpec, io: CliIo): void {
  addList(group, spec, io);
  group
    .command("get <uid>")
    .description(`show one ${spec.kind}`)
    .action(async (uid: string, _opts: object, self: Command) => {
      const ctx = await contextOf(self, io);
      showOne(ctx, spec, await ctx.client().request("GET", `${spec.path}/${uidPath(uid)}`));
    });
  if (spec.create) addCreate(group, spec, spec.create, io);
  if (spec.update) addUpdate(group, spec, io);
  if (spec.delete) {
    group
      .command("delete <uid>")
      .description(`delete ${withArticle(spec.kind)}`)
      .action(async (uid: string, _opts: object, self: Command) => {
        const ctx = await contextOf(self, io);
        const res = await ctx.client().request("DELETE", `${spec.path}/${uidPath(uid)}`);
        if (ctx.output === "json") ctx.printJson(res);
        else ctx.print(`deleted ${spec.kind} ${uid}`);
      });
  }
}
