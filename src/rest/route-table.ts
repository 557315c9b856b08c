import {
  getOption,
  hasOption,
  type DescField,
  type DescMessage,
  type DescMethod,
  type DescMethodUnary,
  type DescService,
} from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { captureVariables, parsePathTemplate, type CapturedValue, type PathTemplate } from "./http-rule.js";
import { elementType, type ElementType } from "./field-values.js";
import { ANY_METHOD, PathTrie } from "./path-trie.js";
import { hasCustomJsonRepresentation } from "@bufbuild/protobuf/wkt";

const FIELD_MASK = "google.protobuf.FieldMask";

export interface PathBinding {
  /** The request fields the variable sets, outermost first. */
  readonly fields: readonly DescField[];
  /** JSON-name path for error messages (`group.uid`). */
  readonly jsonPath: string;
  /** The type of the last field, resolved once for parsing captures. */
  readonly leaf: ElementType;
}

export interface BoundPath {
  /** Proto-name path, e.g. `group.uid`. */
  readonly path: string;
  readonly by: "path" | "body";
}

export type BodyBinding =
  | { readonly kind: "none" }
  | { readonly kind: "all" } // body: "*"
  | { readonly kind: "field"; readonly field: DescField }; // body: "<field>"

/** Present when the request has `FieldMask update_mask` and the body is one message field. */
export interface ImplicitUpdateMask {
  readonly maskField: DescField & { fieldKind: "message" };
  readonly bodyField: DescField & { fieldKind: "message" };
}

export interface Route {
  readonly method: DescMethodUnary;
  readonly httpMethod: string;
  readonly template: PathTemplate;
  /** One per template variable, in template order (as captures come). */
  readonly pathBindings: readonly PathBinding[];
  readonly body: BodyBinding;
  /** Fields that query parameters may not set, because the path or the body does. */
  readonly boundPaths: readonly BoundPath[];
  readonly responseBody: DescField | undefined;
  readonly updateMask: ImplicitUpdateMask | undefined;
  /** ErrorInfo domain for errors raised by the transcoder on this route. */
  readonly errorDomain: string;
}

export type RouteMatch =
  | { readonly kind: "found"; readonly route: Route; readonly captures: readonly CapturedValue[] }
  /** An encoded slash where only a `/` would do: INVALID_ARGUMENT naming `field`. */
  | { readonly kind: "misplaced-slash"; readonly route: Route; readonly field: string; readonly description: string }
  | { readonly kind: "method-not-allowed"; readonly allowed: readonly string[] }
  | { readonly kind: "not-found" };

/**
 * Every REST route of the given services, built from their google.api.http
 * options once; a misconfigured rule fails construction (start-up), never a
 * request.
 */
export class RouteTable {
  private readonly trie = new PathTrie<Route>();
  private readonly areas = new Set<string>();
  readonly routes: readonly Route[];

  constructor(
    services: readonly DescService[],
    private readonly serviceDomain: string,
  ) {
    const routes: Route[] = [];
    for (const service of services) {
      for (const method of service.methods) {
        // Only unary methods are transcoded; streaming ones keep their rules for other tools.
        if (!isUnary(method) || !hasOption(method, http)) continue;
        const rule = getOption(method, http);
        for (const r of [rule, ...rule.additionalBindings]) {
          const route = this.buildRoute(method, r);
          this.trie.add(route.httpMethod, route.template, route);
          routes.push(route);
        }
      }
    }
    this.routes = routes;
  }

  /**
   * Matches the path in its literal form (`%2F` read as `/`), so that an
   * encoded slash never reaches a route the plain path would not; the match
   * stands only when every `%2F` falls inside the route's `**` (docs/design.md,
   * "Encoded slashes in REST paths").
   */
  match(httpMethod: string, path: string): RouteMatch {
    const m = this.trie.match(httpMethod, path);
    if (m.kind === "found") {
      const deep = deepStart(m.template);
      const stray = m.encodedSlashes.find((k) => deep === undefined || k - 1 < deep);
      if (stray === undefined) return { kind: "found", route: m.value, captures: captureVariables(m.template, m.segments) };
      const at = (i: number): number => (deep === undefined ? i : Math.min(i, deep));
      return misplacedSlash(m.value, m.template, [at(stray - 1), at(stray)]);
    }
    if (!ENCODED_SLASH.test(path)) return m;
    // Nothing matched the literal form; if the path as sent puts a `%2F` into a
    // one-segment variable, say so rather than "no route".
    const asSent = this.trie.match(httpMethod, path, false);
    if (asSent.kind === "found") {
      const deep = deepStart(asSent.template) ?? Number.POSITIVE_INFINITY;
      const at = asSent.segments.flatMap((s, i) => (i < deep && ENCODED_SLASH.test(s) ? [i] : []));
      if (at.length > 0) return misplacedSlash(asSent.value, asSent.template, at);
    }
    return m;
  }

  /**
   * The ErrorInfo domain for a request path that matched no route:
   * `<first segment>.<serviceDomain>` when the first segment is an API area
   * (iam, registry, ...), else the bare service domain.
   */
  domainForPath(path: string): string {
    const slash = path.indexOf("/", 1);
    const first = path.slice(1, slash === -1 ? undefined : slash);
    return this.areas.has(first) ? `${first}.${this.serviceDomain}` : this.serviceDomain;
  }

  private buildRoute(method: DescMethodUnary, rule: HttpRule): Route {
    const where = `${method.parent.typeName}.${method.name}`;
    const pattern = httpPattern(rule);
    if (pattern === undefined) throw new Error(`${where}: google.api.http rule without a pattern`);
    const template = parsePathTemplate(pattern.path);
    const input = method.input;

    const pathBindings: PathBinding[] = [];
    const boundPaths: BoundPath[] = [];
    for (const v of template.variables) {
      const fields = resolvePath(input, v.fieldPath, where);
      const leaf = fields[fields.length - 1];
      if (leaf === undefined || (leaf.fieldKind !== "scalar" && leaf.fieldKind !== "enum")) {
        throw new Error(`${where}: path variable ${v.fieldPath.join(".")} must be a singular scalar field`);
      }
      pathBindings.push({ fields, jsonPath: fields.map((f) => f.jsonName).join("."), leaf: elementType(leaf) });
      boundPaths.push({ path: fields.map((f) => f.name).join("."), by: "path" });
    }

    let body: BodyBinding = { kind: "none" };
    if (rule.body === "*") {
      body = { kind: "all" };
    } else if (rule.body !== "") {
      const field = input.fields.find((f) => f.name === rule.body);
      if (field === undefined) throw new Error(`${where}: body field "${rule.body}" not found in ${input.typeName}`);
      body = { kind: "field", field };
      boundPaths.push({ path: field.name, by: "body" });
    }

    let responseBody: DescField | undefined;
    if (rule.responseBody !== "") {
      responseBody = method.output.fields.find((f) => f.name === rule.responseBody);
      if (responseBody === undefined) {
        throw new Error(`${where}: response_body field "${rule.responseBody}" not found in ${method.output.typeName}`);
      }
    }

    const first = template.segments[0];
    let errorDomain: string;
    if (first?.kind === "literal") {
      this.areas.add(first.value);
      errorDomain = `${first.value}.${this.serviceDomain}`;
    } else {
      errorDomain = this.serviceDomain;
    }

    return {
      method,
      httpMethod: pattern.method,
      template,
      pathBindings,
      body,
      boundPaths,
      responseBody,
      updateMask: implicitUpdateMask(input, body),
      errorDomain,
    };
  }
}

const ENCODED_SLASH = /%2f/i;

/** The template segment index of its trailing `**`, if it has one. */
function deepStart(template: PathTemplate): number | undefined {
  const last = template.segments.length - 1;
  return template.segments[last]?.kind === "deep-wildcard" ? last : undefined;
}

/**
 * The answer for a `%2F` next to template segments `at`: named after a
 * variable there without a `**` (the fields a `%2F` cannot reach), else the path.
 */
function misplacedSlash(route: Route, template: PathTemplate, at: readonly number[]): RouteMatch {
  const deep = deepStart(template);
  const index = template.variables.findIndex((v) => (deep === undefined || v.end <= deep) && at.some((i) => i >= v.start && i < v.end));
  const binding = index === -1 ? undefined : route.pathBindings[index];
  const description = 'cannot hold an encoded slash (%2F): only a multi-segment ("**") parameter, such as a uid, may';
  if (binding !== undefined) return { kind: "misplaced-slash", route, field: binding.jsonPath, description };
  return { kind: "misplaced-slash", route, field: "path", description: `${description}; elsewhere send "/"` };
}

function isUnary(method: DescMethod): method is DescMethodUnary {
  return method.methodKind === "unary";
}

function httpPattern(rule: HttpRule): { method: string; path: string } | undefined {
  switch (rule.pattern.case) {
    case "get":
    case "put":
    case "post":
    case "delete":
    case "patch":
      return { method: rule.pattern.case.toUpperCase(), path: rule.pattern.value };
    case "custom": {
      const kind = rule.pattern.value.kind;
      return { method: kind === "*" ? ANY_METHOD : kind.toUpperCase(), path: rule.pattern.value.path };
    }
    default:
      return undefined;
  }
}

/** Resolves `a.b.c` (proto names) to fields, every one but the last a singular message. */
function resolvePath(message: DescMessage, path: readonly string[], where: string): DescField[] {
  const fields: DescField[] = [];
  let current: DescMessage | undefined = message;
  for (const name of path) {
    if (current === undefined) throw new Error(`${where}: ${path.join(".")} goes through a non-message field`);
    const field: DescField | undefined = current.fields.find((f) => f.name === name);
    if (field === undefined) throw new Error(`${where}: field ${path.join(".")} not found in ${message.typeName}`);
    fields.push(field);
    current = field.fieldKind === "message" ? field.message : undefined;
  }
  return fields;
}

function implicitUpdateMask(input: DescMessage, body: BodyBinding): ImplicitUpdateMask | undefined {
  if (body.kind !== "field") return undefined;
  const bodyField = body.field;
  if (bodyField.fieldKind !== "message" || hasCustomJsonRepresentation(bodyField.message)) return undefined;
  const maskField = input.fields.find((f) => f.name === "update_mask");
  if (maskField?.fieldKind !== "message" || maskField.message.typeName !== FIELD_MASK) return undefined;
  return { maskField, bodyField };
}
