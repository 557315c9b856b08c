import { getOption, hasOption, type DescService } from "@bufbuild/protobuf";
import { cors as connectCors } from "@connectrpc/connect";
import { http as httpRule } from "../../gen/google/api/annotations_pb.js";
import type { NodeRequest as Req, NodeResponse as Res } from "../http/types.js";

// Browser origins (docs/security.md, "Browser origins (CORS)"). The lists are
// Connect's own (so every Connect and gRPC-Web client works) plus what the
// REST transcoder and the access log read and answer.

/** Methods a cross-origin script may use: Connect's (GET, POST) and REST's. */
export const CORS_ALLOWED_METHODS: readonly string[] = union(connectCors.allowedMethods, ["GET", "POST", "PATCH", "PUT", "DELETE"]);

/** Request headers a cross-origin script may send: Connect's, the bearer token, and the request id the access log echoes. */
export const CORS_ALLOWED_HEADERS: readonly string[] = union(connectCors.allowedHeaders, ["Authorization", "Content-Type", "X-Request-Id"]);

/** Response headers a cross-origin script may read: Connect's (gRPC-Web status and details), the request id, Retry-After of UNAVAILABLE, Allow of a 405. */
export const CORS_EXPOSED_HEADERS: readonly string[] = union(connectCors.exposedHeaders, [
  "Grpc-Status-Details-Bin",
  "X-Request-Id",
  "Retry-After",
  "Allow",
]);

/** Chromium caps a preflight's cache at two hours; longer would only be ignored there. */
export const CORS_MAX_AGE_SECONDS = 7200;

function union(...lists: (readonly string[])[]): string[] {
  const out = new Map<string, string>();
  for (const list of lists) for (const name of list) if (!out.has(name.toLowerCase())) out.set(name.toLowerCase(), name);
  return [...out.values()];
}

export interface CorsOptions {
  /** Allowed origins, serialised as browsers send them (config.ts parseCorsOrigins). */
  origins: readonly string[];
  /** The API services: their `google.api.http` rules name the REST areas (`/iam/…`, `/registry/…`). */
  services: readonly DescService[];
  /** The auth URL's path ("" at the root): the sign-in and token exchange routes under it stay same-origin only. */
  authPrefix: string;
}

// `/<package>.<Service>/<Method>`: an RPC path, whatever the protocol.
const RPC_PATH = /^\/[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\/[A-Za-z_][A-Za-z0-9_]*$/;

/** The first path segment of every REST rule of `services`: the areas the transcoder serves. */
function restAreas(services: readonly DescService[]): Set<string> {
  const areas = new Set<string>();
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, httpRule)) continue;
      const rule = getOption(method, httpRule);
      for (const r of [rule, ...rule.additionalBindings]) {
        const pattern = r.pattern.case === "custom" ? r.pattern.value.path : r.pattern.value;
        const first = typeof pattern === "string" ? /^\/([^/{}*:]+)\//.exec(pattern)?.[1] : undefined;
        if (first !== undefined) areas.add(first);
      }
    }
  }
  return areas;
}

/** Whether a request path is the API (an RPC or a REST area), and so open to the allowed origins. */
export function apiPathMatcher(services: readonly DescService[], authPrefix: string): (path: string) => boolean {
  const areas = restAreas(services);
  // In case the auth URL's path lies inside an API area: these routes are never the API.
  const authOnly = ["/oauth", "/sts", "/.well-known"].map((p) => `${authPrefix}${p}`);
  return (path) => {
    if (authOnly.some((p) => path === p || path.startsWith(`${p}/`))) return false;
    if (RPC_PATH.test(path)) return true;
    const slash = path.indexOf("/", 1);
    return slash !== -1 && areas.has(path.slice(1, slash));
  };
}

const ALLOW_METHODS = CORS_ALLOWED_METHODS.join(", ");
const ALLOW_HEADERS = CORS_ALLOWED_HEADERS.join(", ");
const EXPOSE_HEADERS = CORS_EXPOSED_HEADERS.join(", ");

/**
 * The CORS step of the request handler, run once before any dispatch.
 * Returns true when it answered the request itself (a preflight). On the
 * API's paths: a preflight from an allowed origin is 204 with the allow
 * lists; from any other origin 403 with no CORS headers; an actual request
 * from an allowed origin gets Access-Control-Allow-Origin (that origin, never
 * `*`) and the exposed headers. Everything else passes through untouched.
 */
export function corsHandler(opts: CorsOptions): (req: Req, res: Res) => boolean {
  const allowed = new Set(opts.origins);
  const isApi = apiPathMatcher(opts.services, opts.authPrefix);
  const enabled = allowed.size > 0;

  return (req, res) => {
    const origin = req.headers.origin;
    const preflight = req.method === "OPTIONS" && origin !== undefined && req.headers["access-control-request-method"] !== undefined;
    // With no origin configured an actual request is left alone; a preflight is still refused (below).
    if (!preflight && !enabled) return false;
    const url = req.url ?? "";
    const q = url.indexOf("?");
    if (!isApi(q === -1 ? url : url.slice(0, q))) return false;
    // Plain string equality against the parsed list: `null`, prefixes, odd bytes never match.
    const ok = typeof origin === "string" && allowed.has(origin);
    if (preflight) {
      if (!ok) {
        res.writeHead(403, { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store", vary: "Origin" });
        res.end("cross-origin request refused: this origin is not in PLATFORM_CORS_ORIGINS\n");
        return true;
      }
      res.writeHead(204, {
        "access-control-allow-origin": origin,
        "access-control-allow-methods": ALLOW_METHODS,
        "access-control-allow-headers": ALLOW_HEADERS,
        "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
        vary: "Origin",
      });
      res.end();
      return true;
    }
    // Answers differ by Origin whenever origins are configured, also to requests without one:
    // a shared cache must not hand one origin's answer to another.
    res.setHeader("vary", "Origin");
    if (ok) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("access-control-expose-headers", EXPOSE_HEADERS);
    }
    return false;
  };
}
