import {
  fromJson,
  getOption,
  hasOption,
  toJson,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
  type JsonValue as ProtoJsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import { type Code, ConnectError, type Transport } from "@connectrpc/connect";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import type { Authorization } from "../../gen/platform/common/v1/authorization_pb.js";
import { declaredAuthorization } from "../../src/descriptors/index.js";
import { API_SERVICES } from "../../src/services/index.js";
import type { JsonObject, JsonValue } from "./clients.js";

// Every API method and its REST bindings, read from the descriptors (never a
// hand-written list), and generic ways to call any of them over REST or a
// Connect-ES transport. Shared by the fuzz suite and the authorization matrix.

/** One `google.api.http` binding: the primary rule or one of its additional_bindings. */
export interface RestBinding {
  /** GET, POST, ... (a custom rule's kind, upper-cased). */
  httpMethod: string;
  /** The path template, e.g. `/iam/v2beta1/groups/{group.uid=**}`. */
  template: string;
  /** "" (no body), "*" or a request field name. */
  body: string;
}

export interface ApiMethod {
  /** `platform.iam.v2beta1.GroupsService/GetGroup`. */
  key: string;
  service: DescService;
  method: DescMethod;
  /** Every REST binding of the method, the primary rule first; empty without google.api.http. */
  rest: RestBinding[];
  /** The method's authorization declaration, or undefined when it has none. */
  authorization: Authorization | undefined;
}

function bindingOf(rule: HttpRule): RestBinding | undefined {
  const p = rule.pattern;
  switch (p.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      return { httpMethod: p.case.toUpperCase(), template: p.value, body: rule.body };
    case "custom":
      return { httpMethod: p.value.kind.toUpperCase(), template: p.value.path, body: rule.body };
    default:
      return undefined;
  }
}

let methods: ApiMethod[] | undefined;

/**
 * Every method of every API service (v2 and v1), as `API_SERVICES` lists them. Read once: the
 * fuzz suite asks for them per case, and reading the options cost it a second.
 */
export function apiMethods(): ApiMethod[] {
  methods ??= readApiMethods();
  return [...methods];
}

function readApiMethods(): ApiMethod[] {
  return API_SERVICES.flatMap(({ service }) =>
    service.methods.map((method): ApiMethod => {
      const rest: RestBinding[] = [];
      if (hasOption(method, http)) {
        const rule = getOption(method, http);
        for (const r of [rule, ...rule.additionalBindings]) {
          const b = bindingOf(r);
          if (b) rest.push(b);
        }
      }
      return { key: `${service.typeName}/${method.name}`, service, method, rest, authorization: declaredAuthorization(method) };
    }),
  );
}

export function isUnary(method: DescMethod): method is DescMethodUnary {
  return method.methodKind === "unary";
}

/** `{field.path=pattern}` or `{field}` in a path template. */
export const TEMPLATE_VARIABLE = /\{([A-Za-z0-9_.]+)(?:=[^}]*)?\}/g;

/** The field paths (proto names) a template captures, in order. */
export function templateVariables(template: string): string[] {
  return [...template.matchAll(TEMPLATE_VARIABLE)].map((m) => m[1]!);
}

/** Replaces each `{var}` of a template with `value(fieldPath)`, verbatim (the caller encodes). */
export function fillTemplate(template: string, value: (fieldPath: string) => string): string {
  return template.replace(TEMPLATE_VARIABLE, (_, fieldPath: string) => value(fieldPath));
}

/** The field of `message` with proto name `name`. */
function fieldNamed(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name);
}

/** Removes and returns the JSON value at a proto-name path of a request in JSON form (JSON or proto keys). */
function takeJson(request: JsonObject, message: DescMessage, path: string[]): JsonValue | undefined {
  let obj: JsonObject = request;
  let desc: DescMessage | undefined = message;
  for (let i = 0; i < path.length; i++) {
    const field: DescField | undefined = desc ? fieldNamed(desc, path[i]!) : undefined;
    const keys = field ? [field.jsonName, field.name] : [path[i]!];
    const key = keys.find((k) => k in obj);
    if (key === undefined) return undefined;
    if (i === path.length - 1) {
      const v = obj[key];
      delete obj[key];
      return v;
    }
    const next = obj[key];
    if (next === null || typeof next !== "object" || Array.isArray(next)) return undefined;
    obj = next;
    desc = field?.fieldKind === "message" ? field.message : undefined;
  }
  return undefined;
}

/** `a.b=1&a.c=x&ids=1&ids=2` from a JSON object (nested objects dotted, arrays repeated). */
export function queryString(json: JsonObject): string {
  const params = new URLSearchParams();
  const walk = (prefix: string, v: JsonValue) => {
    if (v === null) return;
    if (Array.isArray(v)) {
      for (const e of v) walk(prefix, e);
    } else if (typeof v === "object") {
      for (const [k, e] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, e);
    } else {
      params.append(prefix, String(v));
    }
  };
  walk("", json);
  return params.toString();
}

/** A multi-segment path value: each segment percent-encoded, the slashes kept. */
export function encodePathValue(value: string): string {
  return value.split("/").map(encodeURIComponent).join("/");
}

export interface RestRequest {
  httpMethod: string;
  /** Path and query string. */
  path: string;
  body?: JsonValue;
}

/**
 * The REST form of a request given in proto JSON: path variables from the
 * template, the body by the rule's `body`, every other field as a query
 * parameter (a reverse transcoder, written independently of src/rest).
 */
export function restRequestFor(method: DescMethod, binding: RestBinding, request: JsonObject): RestRequest {
  const rest = structuredClone(request);
  const path = fillTemplate(binding.template, (fieldPath) => {
    const v = takeJson(rest, method.input, fieldPath.split("."));
    return encodePathValue(v === undefined || v === null ? "" : String(v));
  });
  let body: JsonValue | undefined;
  if (binding.body === "*") {
    body = rest;
  } else if (binding.body !== "") {
    body = takeJson(rest, method.input, [binding.body]) ?? {};
  }
  const query = binding.body === "*" ? "" : queryString(rest);
  return { httpMethod: binding.httpMethod, path: query ? `${path}?${query}` : path, ...(body === undefined ? {} : { body }) };
}

/** What a REST call answered. */
export interface RestOutcome {
  status: number;
  /** The body text (truncated to 2000 characters for messages). */
  text: string;
  json: JsonValue | undefined;
}

/** fetch() with a timeout; a raw string body is sent as is. */
export async function restCall(
  baseUrl: string,
  req: { httpMethod: string; path: string; body?: JsonValue | string; rawBody?: boolean },
  token: string | undefined,
  timeoutMs = 10_000,
  extraHeaders: Record<string, string> = {},
): Promise<RestOutcome> {
  const headers: Record<string, string> = { ...extraHeaders };
  if (token !== undefined) headers["authorization"] = `Bearer ${token}`;
  let body: string | undefined;
  if (req.body !== undefined) {
    headers["content-type"] ??= "application/json";
    body = typeof req.body === "string" && req.rawBody ? req.body : JSON.stringify(req.body);
  }
  const res = await fetch(baseUrl + req.path, { method: req.httpMethod, headers, body, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  let json: JsonValue | undefined;
  try {
    json = text ? (JSON.parse(text) as JsonValue) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text: text.length > 2000 ? `${text.slice(0, 2000)}…(${text.length} chars)` : text, json };
}

/** What an RPC answered: code 0 and the response in JSON, or the error. */
export interface RpcOutcome {
  code: Code | 0;
  message: string;
  response: JsonObject | undefined;
  error: ConnectError | undefined;
}

/** Calls a unary method through a Connect-ES transport with a bearer token (or none) and a deadline. */
export async function rpcCall(
  transport: Transport,
  method: DescMethodUnary,
  request: MessageShape<DescMessage>,
  token: string | undefined,
  timeoutMs = 10_000,
): Promise<RpcOutcome> {
  const header = new Headers();
  if (token !== undefined) header.set("authorization", `Bearer ${token}`);
  try {
    const res = await transport.unary(method, AbortSignal.timeout(timeoutMs), timeoutMs, header, request);
    return { code: 0, message: "", response: toJson(method.output, res.message) as JsonObject, error: undefined };
  } catch (e) {
    const err = ConnectError.from(e);
    return { code: err.code, message: err.rawMessage, response: undefined, error: err };
  }
}

/** A request message of `method` from its proto JSON form. */
export function requestFromJson(method: DescMethodUnary, json: JsonObject): MessageShape<DescMessage> {
  return fromJson(method.input, json as ProtoJsonValue);
}

/** The repeated message field holding a List response's results (`groups`, `items`, ...). */
export function resultsField(output: DescMessage): DescField | undefined {
  return output.fields.find((f) => f.fieldKind === "list" && f.listKind === "message");
}

/** The results of a List response in JSON form (an absent repeated field is empty). */
export function listResults(output: DescMessage, response: JsonValue | undefined): JsonObject[] {
  const field = resultsField(output);
  if (!field || response === null || typeof response !== "object" || Array.isArray(response)) return [];
  return ((response[field.jsonName] ?? []) as JsonObject[]) ?? [];
}
