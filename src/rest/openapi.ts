import {
  getOption,
  hasOption,
  ScalarType,
  type DescEnum,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescService,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence, hasCustomJsonRepresentation, isWrapperDesc } from "@bufbuild/protobuf/wkt";
import { FieldBehavior, field_behavior } from "../../gen/google/api/field_behavior_pb.js";
import { authorization } from "../../gen/platform/common/v1/authorization_pb.js";
import type { PathTemplate, TemplateVariable } from "./http-rule.js";
import { ANY_METHOD } from "./path-trie.js";
import { RouteTable, type Route } from "./route-table.js";

// The OpenAPI 3.1 description of the REST surface, built from the same
// compiled routes the transcoder serves (route-table.ts) and describing
// bodies the way request-binding.ts reads them and json-render.ts writes
// them. Built once at start; docs/rest.md, "OpenAPI and the docs page".

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type JsonObject = { [k: string]: Json };

export interface OpenApiOptions {
  /** Every service whose methods may carry google.api.http rules (the transcoder's list). */
  readonly services: readonly DescService[];
  /** info.version: the package version. */
  readonly version: string;
}

const OPERATION_KEYS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);
const STATUS = "google.rpc.Status";
const TIMESTAMP = "google.protobuf.Timestamp";
const DURATION = "google.protobuf.Duration";
const FIELD_MASK = "google.protobuf.FieldMask";
const EMPTY = "google.protobuf.Empty";

/**
 * Which side of the wire a message schema describes. Responses carry every
 * field (json-render.ts), so the response variant lists them as required;
 * request bodies may leave anything out, so the request variant lists none.
 */
type Side = "response" | "request";

/** Error responses every operation may give; all are google.rpc.Status bodies (src/http/response.ts). */
const ERROR_RESPONSES: readonly (readonly [status: string, name: string, description: string, writesOnly: boolean])[] = [
  ["400", "BadRequest", "INVALID_ARGUMENT, FAILED_PRECONDITION or OUT_OF_RANGE: the request cannot be served as it is.", false],
  ["401", "Unauthenticated", "UNAUTHENTICATED: no bearer token, or one that is not valid.", false],
  ["403", "PermissionDenied", "PERMISSION_DENIED: the caller lacks the capability.", false],
  ["404", "NotFound", "NOT_FOUND: no such resource, or no such REST route.", false],
  ["409", "Conflict", "ALREADY_EXISTS or ABORTED.", true],
  [
    "429",
    "ResourceExhausted",
    "RESOURCE_EXHAUSTED: a limit is reached (an organization's webhook subscriptions); a QuotaFailure detail names it.",
    true,
  ],
  ["503", "Unavailable", "UNAVAILABLE: the database cannot be reached; retry after `Retry-After` seconds.", false],
];

export function buildOpenApiDocument(opts: OpenApiOptions): JsonObject {
  // The same compilation the transcoder does; the domain only names REST errors, unused here.
  const table = new RouteTable(opts.services, "openapi.invalid");
  const schemas = new SchemaSet();
  const paths: Record<string, Record<string, JsonObject>> = {};
  const tags = new Map<string, JsonObject>();
  const routes = table.routes.filter((route) => OPERATION_KEYS.has(openApiMethod(route)));
  const names = parameterNames(routes);
  const ids = operationIds(routes);

  for (const route of routes) {
    const verb = openApiMethod(route);
    const service = route.method.parent;
    const parts = pathParts(route.template);
    const chosen = names.get(shapeKey(parts, route.template.verb)) ?? [];
    const path = renderPath(parts, chosen, route.template.verb);
    const item = (paths[path] ??= {});
    // Templates that differ only in a variable's pattern (`{x=*}`, `{x=**}`) share one OpenAPI path: the first is described.
    if (item[verb] !== undefined) continue;
    tags.set(service.typeName, { name: service.typeName });
    item[verb] = operation(route, ids.get(route) ?? route.method.name, parts, chosen, schemas);
  }

  const responses: JsonObject = {
    Error: errorResponse("Any other error, as a google.rpc.Status."),
  };
  for (const [, name, description] of ERROR_RESPONSES) responses[name] = errorResponse(description);
  // Only 503 says when to come back.
  (responses["Unavailable"] as JsonObject)["headers"] = {
    "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" } },
  };

  return {
    openapi: "3.1.0",
    info: {
      title: "Platform API v2",
      version: opts.version,
      description:
        "The REST/JSON transcoding of the Platform API's gRPC services, generated from the protos' `google.api.http` rules. " +
        "Every field of a resource is present in responses: unset messages are `null`, 64-bit integers are strings, enums are names, " +
        "timestamps are RFC 3339 with milliseconds. Errors are `google.rpc.Status` bodies.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    security: [{ bearer: [] }],
    // In the order the services come (src/services/index.ts lists the v1 ones last).
    tags: [...tags.values()],
    paths: paths as JsonObject,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description:
            "An API token (`Authorization: Bearer <token>`): from `platformctl auth login`, the token exchange, or the admin token file.",
        },
      },
      responses,
      schemas: schemas.components(),
    },
  };
}

function errorResponse(description: string): JsonObject {
  return { description, content: { "application/json": { schema: { $ref: ref(STATUS) } } } };
}

/** The operation key of a route (`get`, `post`, ...); "" for `custom: {kind: "*"}`, which has none. */
function openApiMethod(route: Route): string {
  return route.httpMethod === ANY_METHOD ? "" : route.httpMethod.toLowerCase();
}

/** A path template as OpenAPI writes it: literals, and one parameter per variable or bare `*`/`**`. */
type PathPart =
  | { readonly kind: "literal"; readonly value: string }
  | { readonly kind: "parameter"; readonly variable: TemplateVariable | undefined; readonly ruleName: string };

/** `/iam/v2beta1/groups/{uid=**}` → literals and the parameter `uid` (the verb is kept apart). */
function pathParts(template: PathTemplate): PathPart[] {
  const out: PathPart[] = [];
  let i = 0;
  while (i < template.segments.length) {
    const variable = template.variables.find((v) => v.start === i);
    if (variable !== undefined) {
      out.push({ kind: "parameter", variable, ruleName: variable.fieldPath.join(".") });
      i = variable.end;
      continue;
    }
    const segment = template.segments[i];
    // A wildcard outside any variable matches a segment nobody reads; it still needs a name.
    out.push(
      segment?.kind === "literal"
        ? { kind: "literal", value: segment.value }
        : { kind: "parameter", variable: undefined, ruleName: `_${i}` },
    );
    i++;
  }
  return out;
}

/** The path with every parameter unnamed: templates with the same shape are one OpenAPI path. */
function shapeOf(parts: readonly PathPart[]): string {
  return parts.map((p) => (p.kind === "literal" ? `/${p.value}` : "/{}")).join("");
}

function shapeKey(parts: readonly PathPart[], verb: string): string {
  return verb === "" ? shapeOf(parts) : `${shapeOf(parts)}:${verb}`;
}

function renderPath(parts: readonly PathPart[], names: readonly string[], verb: string): string {
  let n = 0;
  const out = parts.map((p) => (p.kind === "literal" ? `/${p.value}` : `/{${names[n++] ?? p.ruleName}}`)).join("");
  return verb === "" ? out : `${out}:${verb}`;
}

/**
 * One set of parameter names per path shape (OpenAPI 3.1 allows no two
 * templates that differ only in names): the Get's, else the Delete's, else
 * the first route's (docs/design.md, "The OpenAPI document's paths and
 * operation ids"). Keyed by shape and custom verb, as the path is.
 */
function parameterNames(routes: readonly Route[]): Map<string, string[]> {
  const preference = (r: Route): number => ({ GET: 0, DELETE: 1 })[r.httpMethod] ?? 2;
  const out = new Map<string, string[]>();
  const rank = new Map<string, number>();
  for (const route of routes) {
    const parts = pathParts(route.template);
    const key = shapeKey(parts, route.template.verb);
    const p = preference(route);
    if (out.has(key) && (rank.get(key) ?? 0) <= p) continue;
    out.set(
      key,
      parts.flatMap((part) => (part.kind === "parameter" ? [part.ruleName] : [])),
    );
    rank.set(key, p);
  }
  return out;
}

/**
 * The RPC name; an older API version's RPC whose name a newer version also
 * declares gets its version as a prefix (`v1_CreateGroup`); an additional
 * binding adds what differs from the main rule (`CreateGroupWithoutParent`,
 * `UpdateGroupViaPatch`). docs/design.md, "The OpenAPI document's paths and
 * operation ids".
 */
function operationIds(routes: readonly Route[]): Map<Route, string> {
  const newest = new Map<string, number>();
  for (const route of routes) {
    const rank = versionRank(route.method.parent);
    newest.set(route.method.name, Math.max(newest.get(route.method.name) ?? rank, rank));
  }
  const main = new Map<DescMethod, Route>();
  const out = new Map<Route, string>();
  const taken = new Map<string, Route>();
  for (const route of routes) {
    const method = route.method;
    const first = main.get(method);
    if (first === undefined) main.set(method, route);
    const prefix = versionRank(method.parent) < (newest.get(method.name) ?? 0) ? `${versionOf(method.parent)}_` : "";
    const id = `${prefix}${method.name}${first === undefined ? "" : bindingSuffix(first, route)}`;
    const clash = taken.get(id);
    if (clash !== undefined) {
      throw new Error(`operation id ${id} of ${route.httpMethod} ${route.template.source} is taken by ${clash.template.source}`);
    }
    taken.set(id, route);
    out.set(route, id);
  }
  return out;
}

/** What an additional binding does differently from the main one, as a name. */
function bindingSuffix(main: Route, other: Route): string {
  const fields = (r: Route): string[] => r.template.variables.map((v) => v.fieldPath.join("."));
  let suffix = "";
  if (other.httpMethod !== main.httpMethod) suffix += `Via${pascal(other.httpMethod.toLowerCase())}`;
  for (const f of fields(main)) if (!fields(other).includes(f)) suffix += `Without${pascal(f)}`;
  for (const f of fields(other)) if (!fields(main).includes(f)) suffix += `With${pascal(f)}`;
  if (other.template.verb !== main.template.verb) suffix += other.template.verb === "" ? "WithoutVerb" : `As${pascal(other.template.verb)}`;
  // Only literals differ: name it after them.
  if (suffix === "") suffix = `At${pascal(shapeOf(pathParts(other.template)).replace(/\{\}/g, ""))}`;
  return suffix;
}

/** `group.uid` → `GroupUid`, `/iam/v1/groups` → `IamV1Groups`. */
function pascal(text: string): string {
  return text
    .split(/[^A-Za-z0-9]+/)
    .filter((w) => w !== "")
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join("");
}

/** The package's version component (`platform.iam.v1` → `v1`), or the package when it has none. */
function versionOf(service: DescService): string {
  const pkg = service.file.proto.package;
  return pkg.split(".").findLast((p) => VERSION.test(p)) ?? pkg.replaceAll(".", "_");
}

const VERSION = /^v(\d+)(?:(alpha|beta)(\d*))?$/;

/** Orders API versions: v1alpha1 < v1beta1 < v1 < v2alpha1 < v2beta1 < v2. */
function versionRank(service: DescService): number {
  const m = VERSION.exec(versionOf(service));
  if (m === null) return 0;
  const stage = m[2] === undefined ? 2_000 : (m[2] === "beta" ? 1_000 : 0) + Number(m[3] || 0);
  return Number(m[1]) * 10_000 + stage;
}

function operation(
  route: Route,
  operationId: string,
  parts: readonly PathPart[],
  names: readonly string[],
  schemas: SchemaSet,
): JsonObject {
  const method = route.method;
  const service = method.parent;
  const auth = hasOption(method, authorization) ? getOption(method, authorization) : undefined;
  const lines = [`Transcoded to \`${service.typeName}/${method.name}\` (the same call over gRPC and Connect).`];
  if (auth !== undefined && auth.capability !== "") lines.push(`Needs the capability \`${auth.capability}\`.`);

  const parameters: JsonObject[] = [...pathParameters(route, parts, names, schemas), ...queryParameters(route, schemas)];
  const op: JsonObject = {
    tags: [service.typeName],
    operationId,
    summary: method.name,
    description: lines.join(" "),
    parameters,
  };
  const body = requestBody(route, schemas);
  if (body !== undefined) op["requestBody"] = body;

  const responses: JsonObject = {
    "200": { description: "OK", content: { "application/json": { schema: responseSchema(route, schemas) } } },
  };
  const writes = route.httpMethod !== "GET";
  for (const [status, name, , writesOnly] of ERROR_RESPONSES) {
    if (!writesOnly || writes) responses[status] = { $ref: `#/components/responses/${name}` };
  }
  responses["default"] = { $ref: "#/components/responses/Error" };
  op["responses"] = responses;
  if (method.deprecated) op["deprecated"] = true;
  return op;
}

/** One parameter per template part, named as the document's path names it, saying which field it sets. */
function pathParameters(route: Route, parts: readonly PathPart[], names: readonly string[], schemas: SchemaSet): JsonObject[] {
  const out: JsonObject[] = [];
  let n = 0;
  for (const part of parts) {
    if (part.kind !== "parameter") continue;
    const name = names[n++] ?? part.ruleName;
    const index = part.variable === undefined ? -1 : route.template.variables.indexOf(part.variable);
    const binding = route.pathBindings[index];
    const leaf = binding?.fields[binding.fields.length - 1];
    if (binding === undefined || leaf === undefined) {
      out.push({ name, in: "path", required: true, description: "Any segment; not read.", schema: { type: "string" } });
      continue;
    }
    const lines = [`Sets the request's \`${binding.jsonPath}\`.`];
    if (deepVariable(route.template, part.variable)) {
      lines.push("May hold `/` (a uid below an organization): send it as is or percent-encoded (`%2F`).");
    } else if (part.variable?.multiSegment === true) {
      lines.push("Holds `/` between its segments: send it as is, not as `%2F`.");
    }
    out.push({ name, in: "path", required: true, description: lines.join(" "), schema: schemas.field(leaf, "request", "value") });
  }
  return out;
}

/** Whether a variable ends in the template's `**`, where a `%2F` reads as `/`. */
function deepVariable(template: PathTemplate, variable: TemplateVariable | undefined): boolean {
  return (
    variable !== undefined && variable.end === template.segments.length && template.segments[variable.end - 1]?.kind === "deep-wildcard"
  );
}

/**
 * What request-binding.ts accepts in the query string: every field the path
 * and body do not set, through singular plain messages (`uidp.children_of`),
 * but no maps, no lists of plain messages, and only the well-known types it
 * can parse from text. Proto names; the JSON names are accepted too.
 */
function queryParameters(route: Route, schemas: SchemaSet): JsonObject[] {
  if (route.body.kind === "all") return [];
  const out: JsonObject[] = [];
  const bound = (path: string): boolean => route.boundPaths.some((b) => path === b.path || path.startsWith(`${b.path}.`));
  const walk = (message: DescMessage, protoPrefix: string, jsonPrefix: string, within: ReadonlySet<string>): void => {
    for (const field of message.fields) {
      const protoPath = protoPrefix + field.name;
      const jsonPath = jsonPrefix + field.jsonName;
      if (bound(protoPath)) continue;
      const element = elementMessage(field);
      if (field.fieldKind === "map") continue;
      if (element !== undefined && !hasCustomJsonRepresentation(element)) {
        // Plain messages are entered (singular only), once per branch: recursive types end here.
        if (field.fieldKind === "message" && !within.has(element.typeName)) {
          walk(element, `${protoPath}.`, `${jsonPath}.`, new Set([...within, element.typeName]));
        }
        continue;
      }
      if (element !== undefined && !textParsable(element)) continue;
      const param: JsonObject = { name: protoPath, in: "query", required: false, schema: schemas.field(field, "request", "value") };
      const notes: string[] = [];
      if (jsonPath !== protoPath) notes.push(`Also accepted as \`${jsonPath}\`.`);
      if (field.fieldKind === "list") notes.push("Repeat the parameter for several values.");
      if (notes.length > 0) param["description"] = notes.join(" ");
      if (field.deprecated) param["deprecated"] = true;
      out.push(param);
    }
  };
  walk(route.method.input, "", "", new Set([route.method.input.typeName]));
  return out;
}

function requestBody(route: Route, schemas: SchemaSet): JsonObject | undefined {
  const body = route.body;
  if (body.kind === "none") return undefined;
  const schema =
    body.kind === "all" ? { $ref: ref(schemas.message(route.method.input, "request")) } : schemas.field(body.field, "request", "value");
  const required = body.kind === "field" && getOption(body.field, field_behavior).includes(FieldBehavior.REQUIRED);
  const description =
    body.kind === "all" ? "The request message; fields in the path win over the body." : `The request's \`${body.field.jsonName}\`.`;
  return { description, required, content: { "application/json": { schema } } };
}

function responseSchema(route: Route, schemas: SchemaSet): Json {
  const output = route.method.output;
  if (route.responseBody !== undefined) return schemas.field(route.responseBody, "response", "property");
  return { $ref: ref(schemas.message(output, "response")) };
}

function elementMessage(field: DescField): DescMessage | undefined {
  switch (field.fieldKind) {
    case "message":
      return field.message;
    case "list":
      return field.listKind === "message" ? field.message : undefined;
    case "map":
      return field.mapKind === "message" ? field.message : undefined;
    default:
      return undefined;
  }
}

/** The well-known types field-values.ts parses from URL text. */
function textParsable(desc: DescMessage): boolean {
  return desc.typeName === TIMESTAMP || desc.typeName === DURATION || desc.typeName === FIELD_MASK || isWrapperDesc(desc);
}

function ref(name: string): string {
  return `#/components/schemas/${name}`;
}

/**
 * The component schemas, added as they are first referenced. Plain messages
 * get one schema per side (`<type name>` for responses, `<type name>-Input`
 * for bodies: a proto name never holds `-`); enums and well-known types one.
 */
class SchemaSet {
  private readonly schemas = new Map<string, Json>();

  constructor() {
    this.schemas.set(STATUS, {
      type: "object",
      description: "google.rpc.Status: the body of every error (`code` is the gRPC code number).",
      properties: {
        code: { type: "integer", format: "int32", description: "The gRPC status code, e.g. 5 for NOT_FOUND." },
        message: { type: "string" },
        details: {
          type: "array",
          description: "Typed details: always an ErrorInfo; BadRequest, PreconditionFailure, ResourceInfo as the code calls for.",
          items: { $ref: ref("google.protobuf.Any") },
        },
      },
      required: ["code", "message", "details"],
    });
    this.wellKnown("google.protobuf.Any");
  }

  components(): JsonObject {
    const out: JsonObject = {};
    for (const name of [...this.schemas.keys()].sort()) out[name] = this.schemas.get(name) as Json;
    return out;
  }

  /** The component name of a message's schema on one side, creating it (and what it references) on first use. */
  message(desc: DescMessage, side: Side): string {
    if (hasCustomJsonRepresentation(desc) || desc.typeName === EMPTY) return this.wellKnown(desc.typeName, desc);
    const name = side === "response" ? desc.typeName : `${desc.typeName}-Input`;
    if (this.schemas.has(name)) return name;
    const placeholder: JsonObject = {};
    this.schemas.set(name, placeholder); // before the fields: recursive types refer to themselves
    const properties: JsonObject = {};
    const required: string[] = [];
    for (const field of desc.fields) {
      properties[field.jsonName] = this.field(field, side, "property");
      if (side === "response" && alwaysRendered(field)) required.push(field.jsonName);
    }
    Object.assign(placeholder, { type: "object", title: desc.name, description: `\`${desc.typeName}\``, properties });
    if (required.length > 0) placeholder["required"] = required;
    return name;
  }

  /**
   * A field's schema as a property of its message, or as a bare value (a URL
   * parameter, a body field): a bare value is never `null` and carries no
   * field_behavior annotations.
   */
  field(field: DescField, side: Side, use: "property" | "value"): JsonObject {
    let schema: JsonObject;
    switch (field.fieldKind) {
      case "scalar":
        schema = scalarSchema(field.scalar);
        break;
      case "enum":
        schema = this.enumSchema(field.enum);
        break;
      case "message": {
        schema = { $ref: ref(this.message(field.message, side)) };
        // json-render.ts writes `null` for an unset message unless it is in a oneof or proto3 `optional`.
        if (use === "property" && field.oneof === undefined && !field.proto.proto3Optional) schema = { anyOf: [schema, { type: "null" }] };
        break;
      }
      case "list":
        schema = { type: "array", items: this.element(field.listKind, field.message, field.enum, field.scalar, side) };
        break;
      case "map":
        schema = { type: "object", additionalProperties: this.element(field.mapKind, field.message, field.enum, field.scalar, side) };
        break;
    }
    if (use === "value") return schema;
    const behaviors = getOption(field, field_behavior);
    if (behaviors.includes(FieldBehavior.OUTPUT_ONLY)) schema = { ...schema, readOnly: true };
    if (behaviors.includes(FieldBehavior.INPUT_ONLY)) schema = { ...schema, writeOnly: true };
    if (field.deprecated) schema = { ...schema, deprecated: true };
    return schema;
  }

  /** One list element or map value. */
  private element(
    kind: "scalar" | "enum" | "message",
    message: DescMessage | undefined,
    desc: DescEnum | undefined,
    scalar: ScalarType | undefined,
    side: Side,
  ): JsonObject {
    if (kind === "message" && message !== undefined) return { $ref: ref(this.message(message, side)) };
    if (kind === "enum" && desc !== undefined) return this.enumSchema(desc);
    return scalarSchema(scalar ?? ScalarType.STRING);
  }

  private enumSchema(desc: DescEnum): JsonObject {
    // protojson writes google.protobuf.NullValue as a JSON null.
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    if (!this.schemas.has(desc.typeName)) {
      this.schemas.set(desc.typeName, { type: "string", title: desc.name, enum: desc.values.map((v) => v.name) });
    }
    return { $ref: ref(desc.typeName) };
  }

  /** A well-known type with its own JSON form (protojson), or Empty. */
  private wellKnown(typeName: string, desc?: DescMessage): string {
    if (this.schemas.has(typeName)) return typeName;
    let schema: JsonObject;
    switch (typeName) {
      case TIMESTAMP:
        schema = {
          type: "string",
          format: "date-time",
          description: "RFC 3339 in UTC; responses always carry milliseconds.",
          examples: ["2026-11-22T14:00:00.123Z"],
        };
        break;
      case DURATION:
        schema = {
          type: "string",
          pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$",
          description: "Seconds with an `s` suffix.",
          examples: ["3600s"],
        };
        break;
      case FIELD_MASK:
        schema = { type: "string", description: "Comma-separated field paths (JSON or proto names).", examples: ["name,description"] };
        break;
      case EMPTY:
        schema = { type: "object", description: "An empty object.", maxProperties: 0 };
        break;
      case "google.protobuf.Struct":
        schema = { type: "object", additionalProperties: true };
        break;
      case "google.protobuf.Value":
        schema = {};
        break;
      case "google.protobuf.ListValue":
        schema = { type: "array", items: {} };
        break;
      case "google.protobuf.Any":
        schema = {
          type: "object",
          description: "A message with its type: `@type` names it, the other members are its fields.",
          properties: { "@type": { type: "string", examples: ["type.googleapis.com/google.rpc.ErrorInfo"] } },
          required: ["@type"],
          additionalProperties: true,
        };
        break;
      default: {
        const inner = desc !== undefined && isWrapperDesc(desc) ? desc.fields[0] : undefined;
        schema = inner !== undefined ? scalarSchema(inner.scalar) : {};
      }
    }
    this.schemas.set(typeName, { title: typeName.slice(typeName.lastIndexOf(".") + 1), ...schema });
    return typeName;
  }
}

/** Whether json-render.ts writes the field even when it is unset. */
function alwaysRendered(field: DescField): boolean {
  switch (field.fieldKind) {
    case "list":
    case "map":
      return true;
    case "message":
      return field.oneof === undefined && !field.proto.proto3Optional;
    default:
      return field.presence === FeatureSet_FieldPresence.IMPLICIT;
  }
}

/** protojson: 64-bit integers are strings, floats may be "NaN"/"Infinity", bytes base64. */
function scalarSchema(scalar: ScalarType): JsonObject {
  switch (scalar) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "uint32", minimum: 0, maximum: 4294967295 };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "string", format: "int64", pattern: "^-?[0-9]+$" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64", pattern: "^[0-9]+$" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { anyOf: [{ type: "number" }, { type: "string", enum: ["NaN", "Infinity", "-Infinity"] }] };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
  }
}
