import { withoutTrailingSlash } from "../http/index.js";
import { exchangeRoute, jwks, openidConfiguration, type SigningKeys, type TokenExchangeDeps } from "../auth/index.js";
import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { sendError, sendJson as writeJson } from "../http/response.js";
import { buildInfo } from "../package/index.js";
import type { Metrics } from "./metrics.js";
import type { NodeRequest as Req, NodeResponse as Res, Route } from "../http/types.js";

export interface PlainRouteDeps {
  keys: SigningKeys;
  issuer: string;
  /** Database reachable and not shutting down. */
  ready: () => Promise<boolean>;
  exchange: TokenExchangeDeps;
  /** ErrorInfo domain of auth errors. */
  errorDomain: string;
  /** The host of ErrorInfo domains (`<area>.<serviceDomain>`): the token exchange's are its service's. */
  serviceDomain: string;
  onInternalError: (cause: unknown) => void;
  /** `/metrics`, and counts of token exchanges by outcome. */
  metrics: Metrics;
  /** More routes under the auth URL's path (the browser login), keyed by their path below it. */
  authRoutes?: ReadonlyMap<string, Route>;
  /** `/openapi.json` and the `/docs` page with its files (src/server/api-docs.ts), keyed by their path. */
  docRoutes?: ReadonlyMap<string, Route>;
}

/** JSON through the one writer (src/http/response.ts), with how long it may be cached. */
const sendJson = (res: Res, status: number, body: object, cache = "no-store"): void =>
  writeJson(res, status, body as JsonValue, { "cache-control": cache });

/**
 * The ops and auth routes that are plain HTTP rather than RPCs. Auth routes
 * live under the auth URL's path. Returns undefined when the request is not
 * one of them.
 */
export function plainRoutes(deps: PlainRouteDeps): (req: Req, res: Res) => Promise<void> | undefined {
  const authPrefix = withoutTrailingSlash(new URL(deps.issuer).pathname);
  const version = buildInfo();
  const routes = new Map<string, Route>([
    // The root points where to start (RFC 8631 links too): a curl of the bare address is not a 404.
    [
      "/",
      {
        methods: ["GET", "HEAD"],
        serve: async (_req, res) => {
          res.setHeader("link", '</docs>; rel="service-doc", </openapi.json>; rel="service-desc"');
          sendJson(res, 200, { name: version.name, docs: "/docs", openapi: "/openapi.json", health: "/healthz" }, "public, max-age=300");
        },
      },
    ],
    ["/healthz", { methods: ["GET", "HEAD"], serve: async (_req, res) => sendJson(res, 200, { status: "ok" }) }],
    ["/version", { methods: ["GET", "HEAD"], serve: async (_req, res) => sendJson(res, 200, version) }],
    [
      "/metrics",
      {
        methods: ["GET"],
        serve: async (_req, res) => {
          const text = await deps.metrics.registry.metrics();
          res.writeHead(200, {
            "content-type": deps.metrics.registry.contentType,
            "cache-control": "no-store",
            "content-length": Buffer.byteLength(text),
          });
          res.end(text);
        },
      },
    ],
    [
      "/readyz",
      {
        methods: ["GET", "HEAD"],
        serve: async (_req, res) => {
          const ok = await deps.ready();
          sendJson(res, ok ? 200 : 503, { status: ok ? "ready" : "unavailable" });
        },
      },
    ],
    [
      `${authPrefix}/.well-known/openid-configuration`,
      { methods: ["GET", "HEAD"], serve: async (_req, res) => sendJson(res, 200, openidConfiguration(deps.issuer), "public, max-age=300") },
    ],
    [
      `${authPrefix}/.well-known/jwks.json`,
      { methods: ["GET", "HEAD"], serve: async (_req, res) => sendJson(res, 200, await jwks(deps.keys), "public, max-age=300") },
    ],
    [
      `${authPrefix}/sts/exchange`,
      exchangeRoute({ exchange: deps.exchange, onOutcome: (o) => deps.metrics.tokenExchange(o) }, deps.serviceDomain),
    ],
    ...[...(deps.authRoutes ?? [])].map(([path, route]): [string, Route] => [`${authPrefix}${path}`, route]),
    ...(deps.docRoutes ?? []),
  ]);

  const fail = (res: Res, e: unknown) =>
    sendError(res, e, { domain: deps.errorDomain, headers: { "cache-control": "no-store" }, onInternalError: deps.onInternalError });

  return (req, res) => {
    // Looked up by the path as sent: the URL is parsed only for a request that is one of these routes.
    const raw = req.url ?? "/";
    const q = raw.indexOf("?");
    const route = routes.get(q === -1 ? raw : raw.slice(0, q));
    if (!route) return undefined;
    const url = new URL(raw, "http://localhost");
    if (!route.methods.includes(req.method ?? "")) {
      // A known path with another method: 405 naming the ones it takes, as the REST routes do.
      const allow = route.methods.join(", ");
      const err = new ConnectError(`${req.method ?? ""} is not allowed on ${url.pathname}; allowed: ${allow}`, Code.Unimplemented);
      sendError(res, err, {
        domain: deps.errorDomain,
        status: 405,
        headers: { allow, "cache-control": "no-store" },
        onInternalError: deps.onInternalError,
      });
      return Promise.resolve();
    }
    return route.serve(req, res, url).catch((e: unknown) => fail(res, e));
  };
}
