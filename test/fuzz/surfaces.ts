import { create, toBinary, toJson, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import { Code, ConnectError, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import fc from "fast-check";
import { fetch, type Dispatcher } from "undici";
import { apiMethods, fillTemplate, isUnary, type ApiMethod, type RestBinding } from "../support/api-methods.js";
import type { JsonValue } from "../support/clients.js";
import {
  InitFromDescriptor,
  JsonFromDescriptor,
  anyJson,
  authorizationHeader,
  benignString,
  forgedJwt,
  hex,
  nastyString,
  numericString,
  rawBody,
  uidArbitrary,
  type TokenContext,
} from "./arbitraries.js";

// The surfaces the fuzz suite attacks, each as a case arbitrary and a runner
// that sends one case and judges the answer. The property everywhere: no
// HTTP status >= 500, no gRPC/Connect INTERNAL, UNKNOWN or UNAVAILABLE, no
// dropped connection, no hang (every request has a deadline).

export interface FuzzContext {
  url: string;
  /** The server's issuer / API audience (its base URL). */
  baseUrl: string;
  /** Uids that exist: groups, identities, roles, bindings, repos, tags, ... */
  known: readonly string[];
  tokens: TokenContext;
  timeoutMs: number;
  /**
   * The HTTP/1.1 connection(s) REST, raw and plain-route requests go over (an
   * undici Agent with one connection, so that a request that leaves the
   * connection broken shows on the next one), and the last request sent on it.
   */
  http: { dispatcher: Dispatcher; previous: string };
}

export interface Verdict {
  failed: boolean;
  /** The request and the answer, for the failure message. */
  report: string;
  /** A short label of the outcome for the run's statistics (`400`, `code 3`, ...). */
  outcome: string;
}

const MAX_SHOWN = 600;

/** A string for a failure message: long ones cut, and their length and odd characters made visible. */
export function show(value: unknown): string {
  const text =
    typeof value === "string"
      ? value
      : (JSON.stringify(value, (_k, v: unknown) =>
          typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? `<${v.length} bytes>` : v,
        ) ?? String(value));
  const escaped = JSON.stringify(text.length > MAX_SHOWN ? text.slice(0, MAX_SHOWN) : text);
  return text.length > MAX_SHOWN ? `${escaped}…(${text.length} chars)` : escaped;
}

/** Percent-encodes the UTF-8 bytes of `s` (lone surrogates become U+FFFD), except unreserved characters and, optionally, "/". */
export function pct(s: string, keepSlash: boolean): string {
  let out = "";
  for (const b of Buffer.from(s, "utf8")) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9\-._~]/.test(c) || (keepSlash && c === "/") ? c : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

type Encoding = "segments" | "component" | "raw";

function encode(s: string, how: Encoding): string {
  return how === "raw" ? s : pct(s, how === "segments");
}

type Answer = { status: number; text: string; headers: Headers } | { error: string };

/**
 * Sends a request; a dropped connection or a timeout is a failure, like a
 * 5xx. Such a failure names the request sent before on the same connection,
 * which may be the one that broke it.
 */
async function send(
  ctx: FuzzContext,
  request: string,
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string | Uint8Array | undefined },
): Promise<Answer> {
  const previous = ctx.http.previous;
  ctx.http.previous = request;
  const blame = previous ? `\n  (the request before it on this connection: ${previous})` : "";
  try {
    // The server's answer is what is judged: a redirect (login errors go back to the CLI's
    // loopback callback) is not followed to an address nobody listens on.
    const res = await fetch(url, {
      ...init,
      redirect: "manual",
      dispatcher: ctx.http.dispatcher,
      signal: AbortSignal.timeout(ctx.timeoutMs),
    });
    return { status: res.status, text: await res.text(), headers: res.headers as unknown as Headers };
  } catch (e) {
    const err = e as Error & { cause?: unknown };
    if (err.name === "TimeoutError") return { error: `no answer within ${ctx.timeoutMs} ms${blame}` };
    if (err instanceof TypeError && err.message !== "fetch failed")
      throw new Error(`the test could not send this request (a generator bug): ${err.message}`);
    return {
      error: `connection failed: ${err.message} ${err.cause instanceof Error ? err.cause.message : String(err.cause ?? "")}${blame}`,
    };
  }
}

function httpVerdict(request: string, res: Answer): Verdict {
  if ("error" in res) return { failed: true, report: `${request}\n→ ${res.error}`, outcome: "no answer" };
  return { failed: res.status >= 500, report: `${request}\n→ HTTP ${res.status} ${show(res.text)}`, outcome: String(res.status) };
}

// ---------------------------------------------------------------------------
// REST: every binding of every method.

const COMMON_QUERY_NAMES = [
  "page_size",
  "pageSize",
  "skip",
  "order_by",
  "orderBy",
  "page_token",
  "pageToken",
  "uidp.descendants_of",
  "uidp.descendantsOf",
  "uidp.children_of",
  "uidp.in_root",
  "uidp.ancestors_of",
  "uidp.ids",
  "uidp",
  "name",
  "update_mask",
  "updateMask",
  "uid",
  "id",
  "$alt",
  "alt",
  "fields",
  "show_deleted",
  "updated_since",
];

const ORDER_BY = [
  "name",
  "name desc",
  "uid asc",
  "create_time",
  "created_at desc",
  "update_time",
  "name,uid",
  "name desc desc",
  "nope",
  "",
  " ",
  "name  desc",
  "NAME",
  "name DESC",
  "-name",
  "name;drop",
];

/** Query parameter names a request message accepts (proto and JSON names, dotted into sub-messages). */
function queryNames(desc: DescMessage, prefix: string[] = [], depth = 0): string[] {
  if (depth > 2) return [];
  return desc.fields.flatMap((f) => {
    const names = [[...prefix, f.name].join("."), [...prefix, f.jsonName].join(".")];
    return f.fieldKind === "message" ? [...names, ...queryNames(f.message, [...prefix, f.name], depth + 1)] : names;
  });
}

export interface RestCase {
  route: string;
  httpMethod: string;
  template: string;
  captures: string[];
  encoding: Encoding;
  suffix: string;
  query: [string, string][];
  queryEncoding: Encoding;
  rawQuery: string;
  body: { json: JsonValue } | { raw: string } | undefined;
  contentType: string;
  authorization: string | undefined;
}

interface RestRoute {
  method: ApiMethod;
  binding: RestBinding;
}

export function restRoutes(): RestRoute[] {
  return apiMethods().flatMap((method) => method.rest.map((binding) => ({ method, binding })));
}

export function restCases(ctx: FuzzContext): fc.Arbitrary<RestCase> {
  const uids = uidArbitrary(ctx.known);
  const strings = fc.oneof({ weight: 2, arbitrary: uids }, { weight: 2, arbitrary: nastyString }, { weight: 1, arbitrary: benignString });
  const json = new JsonFromDescriptor({ strings, maxDepth: 3 });
  // Mostly ordinary requests with now and then a hostile string: these pass validation and reach the database.
  const ordinary = new JsonFromDescriptor({
    strings: fc.oneof(
      { weight: 4, arbitrary: benignString },
      { weight: 2, arbitrary: fc.constantFrom(...ctx.known) },
      { weight: 1, arbitrary: nastyString },
    ),
    maxDepth: 3,
    wellTyped: true,
  });
  const auth = authorizationHeader(ctx.tokens);
  const value = fc.oneof(
    { weight: 2, arbitrary: benignString },
    { weight: 3, arbitrary: nastyString },
    { weight: 3, arbitrary: uids },
    { weight: 2, arbitrary: numericString },
    { weight: 1, arbitrary: fc.constantFrom(...ORDER_BY) },
    { weight: 1, arbitrary: fc.constantFrom("true", "false", "", "null", "[]", "{}", "*") },
  );
  return fc.oneof(
    ...restRoutes().map(({ method, binding }) => {
      const input = method.method.input;
      const bodyField = input.fields.find((f) => f.name === binding.body);
      const bodyDesc: DescMessage | undefined =
        binding.body === "*" ? input : bodyField?.fieldKind === "message" ? bodyField.message : undefined;
      const names = fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...queryNames(input)) },
        { weight: 3, arbitrary: fc.constantFrom(...COMMON_QUERY_NAMES) },
        { weight: 1, arbitrary: nastyString.filter((s) => s.length < 100) },
      );
      const body = fc.oneof(
        {
          weight: bodyDesc ? 4 : 0,
          arbitrary: (bodyDesc ? json.message(bodyDesc) : fc.constant({})).map((v) => ({ json: v as JsonValue })),
        },
        {
          weight: bodyDesc ? 3 : 0,
          arbitrary: (bodyDesc ? ordinary.message(bodyDesc) : fc.constant({})).map((v) => ({ json: v as JsonValue })),
        },
        { weight: bodyDesc ? 2 : 4, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: anyJson.map((v) => ({ json: v })) },
        { weight: 1, arbitrary: rawBody.map((raw) => ({ raw })) },
      );
      return fc.record({
        route: fc.constant(method.key),
        httpMethod: fc.oneof(
          { weight: 12, arbitrary: fc.constant(binding.httpMethod) },
          { weight: 1, arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD") },
        ),
        template: fc.constant(binding.template),
        captures: fc.array(
          fc.oneof(
            { weight: 4, arbitrary: uids },
            { weight: 2, arbitrary: fc.constantFrom(...ctx.known) },
            { weight: 1, arbitrary: nastyString },
          ),
          { minLength: 3, maxLength: 3 },
        ),
        encoding: fc.constantFrom<Encoding>("segments", "segments", "component", "raw"),
        suffix: fc.oneof(
          { weight: 10, arbitrary: fc.constant("") },
          {
            weight: 1,
            arbitrary: fc.constantFrom("/", "//", "/..", "/x", ":batchCreate", ":import", ":nope", "%00", "/%ff", "%2F", ";x", "/."),
          },
        ),
        query: fc.oneof(
          { weight: 2, arbitrary: fc.constant<[string, string][]>([]) },
          { weight: 3, arbitrary: fc.array(fc.tuple(names, value), { minLength: 1, maxLength: 5 }) },
        ),
        queryEncoding: fc.constantFrom<Encoding>("component", "component", "raw"),
        rawQuery: fc.oneof(
          { weight: 8, arbitrary: fc.constant("") },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              "%00",
              "a=%ff",
              "page_size=%E0%A4%A",
              "&&",
              "=",
              "a",
              "uidp.ids=1&uidp.ids=2",
              "skip=1&skip=2",
              "name=%C0%AF",
              "page_size=1e3",
              "%",
            ),
          },
        ),
        body,
        contentType: fc.oneof(
          { weight: 12, arbitrary: fc.constant("application/json") },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              "text/plain",
              "application/x-www-form-urlencoded",
              "application/json; charset=utf-16",
              "",
              "application/proto",
              "multipart/form-data; boundary=x",
              "application/json; charset=latin1",
            ),
          },
        ),
        authorization: auth,
      });
    }),
  );
}

export function restRequestOf(c: RestCase): { path: string; init: { method: string; headers: Record<string, string>; body?: string } } {
  let i = 0;
  const path = fillTemplate(c.template, () => encode(c.captures[i++] ?? "", c.encoding)) + c.suffix;
  const query = c.query.map(([k, v]) => `${encode(k, c.queryEncoding)}=${encode(v, c.queryEncoding)}`);
  if (c.rawQuery) query.push(c.rawQuery);
  const headers: Record<string, string> = {};
  if (c.authorization !== undefined) headers["authorization"] = c.authorization;
  const withBody = c.body !== undefined && c.httpMethod !== "GET" && c.httpMethod !== "HEAD";
  if (withBody) headers["content-type"] = c.contentType;
  const body = !withBody || c.body === undefined ? undefined : "raw" in c.body ? c.body.raw : JSON.stringify(c.body.json);
  return {
    path: query.length ? `${path}?${query.join("&")}` : path,
    init: { method: c.httpMethod, headers, ...(body === undefined ? {} : { body }) },
  };
}

export async function runRest(ctx: FuzzContext, c: RestCase): Promise<Verdict> {
  const { path, init } = restRequestOf(c);
  const auth =
    c.authorization === undefined
      ? "no token"
      : c.authorization === `Bearer ${ctx.tokens.admin}`
        ? "admin token"
        : `authorization ${show(c.authorization)}`;
  const request = `${c.route}: ${init.method} ${show(path)} (${auth}) body ${show(init.body ?? "<none>")}`;
  return httpVerdict(request, await send(ctx, request, ctx.url + path, init));
}

// ---------------------------------------------------------------------------
// gRPC, gRPC-Web and Connect through Connect-ES clients: every unary method, messages from the input descriptor.

export type RpcProtocol = "grpc" | "grpc-json" | "grpc-web" | "connect" | "connect-json";

export function transports(url: string): Record<RpcProtocol, Transport> {
  return {
    grpc: createGrpcTransport({ baseUrl: url }),
    "grpc-json": createGrpcTransport({ baseUrl: url, useBinaryFormat: false }),
    "grpc-web": createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1" }),
    connect: createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true }),
    "connect-json": createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: false }),
  };
}

export interface RpcCase {
  method: string;
  protocol: RpcProtocol;
  init: Record<string, unknown>;
  authorization: string | undefined;
}

function unaryMethods(): (ApiMethod & { method: DescMethodUnary })[] {
  return apiMethods().filter((m): m is ApiMethod & { method: DescMethodUnary } => isUnary(m.method));
}

export function rpcCases(ctx: FuzzContext): fc.Arbitrary<RpcCase> {
  const strings = fc.oneof(
    { weight: 3, arbitrary: uidArbitrary(ctx.known) },
    { weight: 2, arbitrary: nastyString },
    { weight: 1, arbitrary: benignString },
  );
  const init = new InitFromDescriptor({ strings, maxDepth: 3 });
  // A header beyond the server's limit is answered HTTP 431, which the
  // Connect-ES clients report as UNKNOWN on their side; the REST, raw and
  // plain-route properties send oversized headers and see the 431 itself.
  const auth = authorizationHeader(ctx.tokens).filter((a) => a === undefined || a.length <= 8192);
  return fc.oneof(
    ...unaryMethods().map((m) =>
      fc.record({
        method: fc.constant(m.key),
        protocol: fc.constantFrom<RpcProtocol>("grpc", "grpc", "grpc-json", "connect", "connect-json", "grpc-web"),
        init: init.message(m.method.input),
        authorization: auth,
      }),
    ),
  );
}

const FAILING_CODES = new Set<Code>([Code.Internal, Code.Unknown, Code.Unavailable, Code.DeadlineExceeded, Code.Canceled]);

export async function runRpc(ctx: FuzzContext, all: Record<RpcProtocol, Transport>, c: RpcCase): Promise<Verdict> {
  const m = unaryMethods().find((x) => x.key === c.method);
  if (!m) throw new Error(`no method ${c.method}`);
  const message = create(m.method.input, c.init);
  // A message the client cannot put in JSON (e.g. a Timestamp past year 9999) goes as protobuf.
  let protocol = c.protocol;
  if (protocol === "connect-json" || protocol === "grpc-json") {
    try {
      toJson(m.method.input, message);
    } catch {
      protocol = protocol === "grpc-json" ? "grpc" : "connect";
    }
  }
  toBinary(m.method.input, message);
  const header = new Headers();
  if (c.authorization !== undefined) header.set("authorization", c.authorization);
  const request = `${c.method} over ${protocol} with ${c.authorization === `Bearer ${ctx.tokens.admin}` ? "the admin token" : c.authorization === undefined ? "no token" : `authorization ${show(c.authorization)}`}: ${show(c.init)}`;
  try {
    await all[protocol].unary(m.method, AbortSignal.timeout(ctx.timeoutMs), ctx.timeoutMs, header, message);
    return { failed: false, report: `${request}\n→ OK`, outcome: "OK" };
  } catch (e) {
    const err = ConnectError.from(e);
    return {
      failed: FAILING_CODES.has(err.code),
      report: `${request}\n→ ${Code[err.code]} (${err.code}) ${show(err.rawMessage)}`,
      outcome: Code[err.code] ?? String(err.code),
    };
  }
}

// ---------------------------------------------------------------------------
// By hand: whatever bytes, as JSON or protobuf, to every method's Connect
// endpoint, and as (mis)framed gRPC-Web messages.

export interface RawConnectCase {
  method: string;
  protocol: "connect" | "grpc-web";
  /** gRPC-Web only: the frame's flags byte and a length that may lie. */
  frame: { flags: number; lengthDelta: number; trailing: number[] };
  contentType: string;
  body: { text: string } | { bytes: number[] };
  authorization: string | undefined;
}

export function rawConnectCases(ctx: FuzzContext): fc.Arbitrary<RawConnectCase> {
  const strings = fc.oneof(uidArbitrary(ctx.known), nastyString, benignString);
  const json = new JsonFromDescriptor({ strings, maxDepth: 3 });
  const init = new InitFromDescriptor({ strings, maxDepth: 2 });
  const auth = authorizationHeader(ctx.tokens);
  return fc.oneof(
    ...unaryMethods().map((m) => {
      const validProto = init.message(m.method.input).map((v) => [...toBinary(m.method.input, create(m.method.input, v))]);
      return fc.record({
        method: fc.constant(m.key),
        protocol: fc.constantFrom<RawConnectCase["protocol"]>("connect", "connect", "grpc-web"),
        frame: fc.record({
          flags: fc.oneof({ weight: 8, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(1, 0x80, 0xff) }),
          lengthDelta: fc.oneof(
            { weight: 8, arbitrary: fc.constant(0) },
            { weight: 1, arbitrary: fc.integer({ min: -5, max: 5 }) },
            { weight: 1, arbitrary: fc.constant(2 ** 31) },
          ),
          trailing: fc.oneof(
            { weight: 8, arbitrary: fc.constant<number[]>([]) },
            { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 12 }) },
          ),
        }),
        contentType: fc.oneof(
          { weight: 8, arbitrary: fc.constantFrom("application/json", "application/proto") },
          {
            weight: 1,
            arbitrary: fc.constantFrom(
              "application/json; charset=utf-16",
              "text/plain",
              "application/grpc",
              "application/connect+json",
              "",
            ),
          },
        ),
        body: fc.oneof(
          { weight: 4, arbitrary: json.message(m.method.input).map((v) => ({ text: JSON.stringify(v) })) },
          { weight: 1, arbitrary: anyJson.map((v) => ({ text: JSON.stringify(v) })) },
          { weight: 1, arbitrary: rawBody.map((text) => ({ text })) },
          {
            weight: 2,
            arbitrary: fc
              .tuple(validProto, fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 16 }))
              .map(([a, b]) => ({ bytes: [...a, ...b] })),
          },
          { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 200 }).map((bytes) => ({ bytes })) },
          // A string field (1) carrying invalid UTF-8.
          {
            weight: 1,
            arbitrary: fc
              .array(fc.integer({ min: 0x80, max: 0xff }), { minLength: 1, maxLength: 20 })
              .map((b) => ({ bytes: [0x0a, b.length, ...b] })),
          },
        ),
        authorization: auth,
      });
    }),
  );
}

/** The gRPC status of a gRPC-Web answer: a header (trailers-only) or the trailer frame at the end of the body. */
function grpcWebStatus(res: { text: string; headers: Headers }): number | undefined {
  const header = res.headers.get("grpc-status");
  const found = header ?? /grpc-status:\s*(\d+)/i.exec(res.text)?.[1];
  return found === undefined ? undefined : Number(found);
}

const FAILING_GRPC_STATUS = new Set<number>([Code.Internal, Code.Unknown, Code.Unavailable, Code.DeadlineExceeded]);

export async function runRawConnect(ctx: FuzzContext, c: RawConnectCase): Promise<Verdict> {
  const [service, method] = c.method.split("/");
  const headers: Record<string, string> = {};
  if (c.authorization !== undefined) headers["authorization"] = c.authorization;
  const payload = "text" in c.body ? Buffer.from(c.body.text, "utf8") : Buffer.from(c.body.bytes);
  const shown =
    "text" in c.body ? show(c.body.text) : `bytes [${c.body.bytes.slice(0, 80).join(",")}${c.body.bytes.length > 80 ? ",…" : ""}]`;
  const url = `${ctx.url}/${service}/${method}`;
  if (c.protocol === "connect") {
    headers["content-type"] = c.contentType;
    headers["connect-protocol-version"] = "1";
    const request = `Connect ${c.method} (${c.contentType}) body ${shown}`;
    return httpVerdict(request, await send(ctx, request, url, { method: "POST", headers, body: payload }));
  }
  const contentType = c.contentType === "application/json" ? "application/grpc-web+json" : "application/grpc-web+proto";
  headers["content-type"] = contentType;
  headers["x-grpc-web"] = "1";
  const prefix = Buffer.alloc(5);
  prefix.writeUInt8(c.frame.flags, 0);
  prefix.writeUInt32BE(Math.max(0, Math.min(2 ** 32 - 1, payload.length + c.frame.lengthDelta)), 1);
  const body = Buffer.concat([prefix, payload, Buffer.from(c.frame.trailing)]);
  const request = `gRPC-Web ${c.method} (${contentType}, frame flags ${c.frame.flags}, length ${payload.length}+${c.frame.lengthDelta}, ${c.frame.trailing.length} trailing bytes) message ${shown}`;
  const res = await send(ctx, request, url, { method: "POST", headers, body });
  if ("error" in res) return httpVerdict(request, res);
  const status = grpcWebStatus(res);
  return {
    failed: res.status >= 500 || (status !== undefined && FAILING_GRPC_STATUS.has(status)),
    report: `${request}\n→ HTTP ${res.status}, grpc-status ${status ?? "none"} ${show(res.headers.get("grpc-message") ?? res.text)}`,
    outcome: `${res.status}/${status ?? "-"}`,
  };
}

// ---------------------------------------------------------------------------
// The plain routes: token exchange, the registry's token endpoint and notifications, ops,
// discovery, browser login.

const PLAIN_PATHS = [
  "/sts/exchange",
  "/sts/exchange",
  "/sts/exchange",
  "/registry/token",
  "/registry/token",
  "/registry/token",
  "/registry/notifications",
  "/registry/notifications",
  "/healthz",
  "/readyz",
  "/.well-known/openid-configuration",
  "/.well-known/jwks.json",
  "/oauth",
  "/oauth",
  "/oauth/callback",
  "/oauth/dev",
];

export interface PlainCase {
  path: string;
  suffix: string;
  method: string;
  query: [string, string][];
  queryEncoding: Encoding;
  authorization: string | undefined;
  cookie: string | undefined;
  body: string | undefined;
  contentType: string;
}

export function plainCases(ctx: FuzzContext): fc.Arbitrary<PlainCase> {
  const uids = uidArbitrary(ctx.known);
  const value = fc.oneof(
    { weight: 2, arbitrary: nastyString },
    { weight: 2, arbitrary: uids },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        ctx.baseUrl,
        ...ctx.tokens.issuers,
        "http://127.0.0.1:1234/callback",
        "http://localhost:9/callback",
        "http://[::1]:1/callback",
        "https://evil.example/callback",
        "javascript:alert(1)",
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        `${ctx.baseUrl}/registry`,
        "repository:x/y:pull,push",
        "repository(plugin):a/b:*",
        "registry:catalog:*",
        `repository:${"a/".repeat(200)}b:pull`,
      ),
    },
    { weight: 1, arbitrary: hex(10, 60) },
    { weight: 1, arbitrary: numericString },
  );
  const name = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.constantFrom(
        "aud",
        "identity",
        "redirect",
        "state",
        "invite",
        "org",
        "login",
        "error",
        "code",
        "grant_type",
        "subject_token",
        "audience",
        "service",
        "scope",
        "account",
      ),
    },
    { weight: 1, arbitrary: nastyString.filter((s) => s.length < 50) },
  );
  const auth = fc.oneof(
    { weight: 3, arbitrary: forgedJwt(ctx.tokens).map((t) => `Bearer ${t}`) },
    { weight: 3, arbitrary: authorizationHeader(ctx.tokens) },
  );
  return fc.record({
    path: fc.constantFrom(...PLAIN_PATHS),
    suffix: fc.oneof(
      { weight: 10, arbitrary: fc.constant("") },
      { weight: 1, arbitrary: fc.constantFrom("/", "%00", "/..", "//", "%2F", ".json") },
    ),
    method: fc.constantFrom("GET", "GET", "POST", "POST", "HEAD", "PUT", "DELETE", "OPTIONS"),
    query: fc.array(fc.tuple(name, value), { maxLength: 6 }),
    queryEncoding: fc.constantFrom<Encoding>("component", "component", "raw"),
    authorization: auth,
    cookie: fc.option(fc.string({ maxLength: 80 }), { freq: 4, nil: undefined }),
    body: fc.option(
      fc.oneof(
        rawBody,
        nastyString,
        fc.constant("grant_type=urn:ietf:params:oauth:grant-type:token-exchange&subject_token=x"),
        fc.constant("grant_type=password&username=x&password=y&scope=repository:a/b:pull"),
        fc.constant(
          '{"events":[{"id":"1","timestamp":"2026-01-01T00:00:00Z","action":"push","target":{"mediaType":"application/vnd.oci.image.manifest.v1+json","repository":"a/b","tag":"v1","digest":"sha256:00"},"actor":{"name":"x"}}]}',
        ),
      ),
      { freq: 3, nil: undefined },
    ),
    contentType: fc.constantFrom("application/x-www-form-urlencoded", "application/json", "text/plain"),
  });
}

export async function runPlain(ctx: FuzzContext, c: PlainCase): Promise<Verdict> {
  const query = c.query.map(([k, v]) => `${encode(k, c.queryEncoding)}=${encode(v, c.queryEncoding)}`).join("&");
  const path = `${c.path}${c.suffix}${query ? `?${query}` : ""}`;
  const headers: Record<string, string> = {};
  if (c.authorization !== undefined) headers["authorization"] = c.authorization;
  if (c.cookie !== undefined) headers["cookie"] = c.cookie;
  const withBody = c.body !== undefined && c.method !== "GET" && c.method !== "HEAD";
  if (withBody) headers["content-type"] = c.contentType;
  const request = `${c.method} ${show(path)} authorization ${show(c.authorization ?? "<none>")} body ${show(withBody ? c.body : "<none>")}`;
  return httpVerdict(
    request,
    await send(ctx, request, ctx.url + path, { method: c.method, headers, ...(withBody ? { body: c.body } : {}) }),
  );
}
