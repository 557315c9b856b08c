import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { gzipSync } from "node:zlib";
import type { DescService } from "@bufbuild/protobuf";
import { buildOpenApiDocument } from "../rest/index.js";
import { buildInfo } from "../package/index.js";
import type { NodeRequest as Req, NodeResponse as Res, Route } from "../http/types.js";

// `GET /openapi.json` and the Swagger UI page at `/docs` (docs/rest.md, "OpenAPI
// and the docs page"). The document is built at the first start in a process; Swagger UI's files
// come from the swagger-ui-dist package, a fixed list of them, read on first
// use and kept.

/** A body served as is, with what conditional and compressed GETs need. */
interface Asset {
  readonly type: string;
  readonly body: Buffer;
  readonly gzip: Buffer | undefined;
  readonly etag: string;
  readonly headers: Readonly<Record<string, string>>;
}

const SECURITY_HEADERS = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };

// Everything from this server; no inline script (the initializer is its own file). Swagger UI's
// CSS draws its icons from data: URIs, and "Try it out" calls the API on this origin.
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join("; ");

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Platform API v2</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
<link rel="icon" type="image/png" sizes="32x32" href="/docs/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// No validator badge (it would send the document to validator.swagger.io) and no top bar
// (its URL box would load documents from anywhere).
const INITIALIZER = `"use strict";
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

/** The swagger-ui-dist files the page uses; nothing else of the package is reachable. */
const PACKAGE_FILES: Readonly<Record<string, string>> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "favicon-16x16.png": "image/png",
};

/** The routes, keyed by exact path, for the plain routes (src/server/plain-routes.ts). */
export function apiDocRoutes(opts: { services: readonly DescService[] }): Map<string, Route> {
  const openapi = openApiAsset(opts.services);
  const page = asset("text/html; charset=utf-8", Buffer.from(PAGE), {
    "cache-control": "public, max-age=300",
    "content-security-policy": PAGE_CSP,
    "x-frame-options": "DENY",
  });
  const initializer = asset("text/javascript; charset=utf-8", Buffer.from(INITIALIZER), { "cache-control": "public, max-age=300" });

  // Resolved now, so that a broken install fails the start rather than the first visit.
  const packageDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

  const routes = new Map<string, Route>();
  const fixed = (a: Asset): Route => ({ methods: ["GET", "HEAD"], serve: async (req, res) => send(req, res, a) });
  routes.set("/openapi.json", fixed(openapi));
  routes.set("/docs", fixed(page));
  routes.set("/docs/", fixed(page));
  routes.set("/docs/init.js", fixed(initializer));
  for (const [name, type] of Object.entries(PACKAGE_FILES)) {
    let loaded: Promise<Asset> | undefined;
    const load = (): Promise<Asset> =>
      (loaded ??= readFile(join(packageDir, name))
        .then((body) => asset(type, body, { "cache-control": "public, max-age=86400" }))
        .catch((e: unknown) => {
          loaded = undefined; // try again on the next request
          throw e;
        }));
    routes.set(`/docs/${name}`, { methods: ["GET", "HEAD"], serve: async (req, res) => send(req, res, await load()) });
  }
  return routes;
}

/**
 * The document is a function of the descriptors and the version: made once per process, however
 * many applications it starts (the test suite starts dozens; it took a tenth of their start).
 */
const openApiAssets = new Map<string, Asset>();

function openApiAsset(services: readonly DescService[]): Asset {
  const version = buildInfo().version;
  const key = `${version} ${services.map((s) => s.typeName).join(" ")}`;
  let found = openApiAssets.get(key);
  if (!found) {
    const document = buildOpenApiDocument({ services, version });
    found = asset("application/json", Buffer.from(JSON.stringify(document)), { "cache-control": "public, max-age=300" });
    openApiAssets.set(key, found);
  }
  return found;
}

function asset(type: string, body: Buffer, headers: Record<string, string>): Asset {
  const compressible = !type.startsWith("image/");
  return {
    type,
    body,
    gzip: compressible ? gzipSync(body) : undefined,
    etag: `"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`,
    headers,
  };
}

function send(req: Req, res: Res, a: Asset): void {
  const headers: Record<string, string | number> = { ...SECURITY_HEADERS, ...a.headers, etag: a.etag };
  if (a.gzip !== undefined) headers["vary"] = "accept-encoding";
  if (matchesEtag(req.headers["if-none-match"], a.etag)) {
    res.writeHead(304, headers);
    res.end();
    return;
  }
  const gzip = a.gzip !== undefined && acceptsGzip(req.headers["accept-encoding"]);
  const body = gzip && a.gzip !== undefined ? a.gzip : a.body;
  headers["content-type"] = a.type;
  headers["content-length"] = body.byteLength;
  if (gzip) headers["content-encoding"] = "gzip";
  res.writeHead(200, headers);
  // HEAD: the headers of the GET, no body.
  if (req.method === "HEAD") res.end();
  else res.end(body);
}

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(",").some((t) => {
    const tag = t.trim();
    return tag === "*" || tag === etag || tag === `W/${etag}`;
  });
}

function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  return header.split(",").some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    if (coding?.trim() !== "gzip") return false;
    // `gzip;q=0` refuses it.
    return !params.some((p) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(p));
  });
}
