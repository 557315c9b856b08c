import type http from "node:http";
import type http2 from "node:http2";
import { jwks, openidConfiguration, type SigningKeys } from "../auth/index.js";

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

export interface PlainRouteDeps {
  keys: SigningKeys;
  issuer: string;
  /** Database reachable and not shutting down. */
  ready: () => Promise<boolean>;
}

function sendJson(res: Res, status: number, body: unknown, cache = "no-store"): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "cache-control": cache, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The ops and auth routes that are plain HTTP rather than RPCs. Returns
 * undefined when the request is not one of them.
 */
export function plainRoutes(deps: PlainRouteDeps): (req: Req, res: Res) => Promise<void> | undefined {
  const routes: Record<string, (res: Res) => Promise<void>> = {
    "/healthz": async (res) => sendJson(res, 200, { status: "ok" }),
    "/readyz": async (res) => {
      const ok = await deps.ready();
      sendJson(res, ok ? 200 : 503, { status: ok ? "ready" : "unavailable" });
    },
    "/.well-known/openid-configuration": async (res) =>
      sendJson(res, 200, openidConfiguration(deps.issuer), "public, max-age=300"),
    "/.well-known/jwks.json": async (res) => sendJson(res, 200, await jwks(deps.keys), "public, max-age=300"),
  };
  return (req, res) => {
    if (req.method !== "GET" && req.method !== "HEAD") return undefined;
    const path = (req.url ?? "/").split("?", 1)[0] ?? "/";
    const route = routes[path];
    return route?.(res);
  };
}
