import { resolve } from "node:path";
import type { OrgCreationPolicy } from "../authz/authorizer.js";
import { decodeMasterKey } from "../crypto/index.js";

/** Everything the server reads from its environment (README: Configuration). */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  /**
   * PLATFORM_MASTER_KEY: the key that seals secrets at rest. Undefined: the
   * key file `<dataDir>/master-key` (created at first start). Replicas
   * sharing one PostgreSQL database must all be given the same key.
   */
  masterKey: Buffer | undefined;
  /** The API base URL: the `aud` of API tokens. Defaults to http://localhost:<port>. */
  baseUrl: string | undefined;
  /** The token issuer URL. Defaults to the base URL. */
  authUrl: string | undefined;
  /** The audience of registry tokens. Defaults to `<base URL>/registry`. */
  registryAudience: string | undefined;
  bootstrap: boolean;
  allowInsecureIssuers: boolean;
  /** The global upstream OIDC provider of browser login (README: Signing in); undefined: none. */
  oidc: { issuer: string; clientId: string; clientSecret: string; scopes: string[] } | undefined;
  /**
   * Serve the development sign-in provider (anyone signs in as any name).
   * Default: only on a loopback listener with no upstream configured.
   */
  devLogin: boolean;
  /** Who may found organizations (PLATFORM_ORG_CREATION). */
  orgCreation: OrgCreationPolicy;
  /** Connection timeouts (README: Configuration): slow or idle clients cannot hold sockets. */
  timeouts: { headersMs: number; requestMs: number; idleMs: number };
  tls: { certFile: string; keyFile: string } | undefined;
  logLevel: string;
  /** How long SIGTERM waits for in-flight requests before closing connections. */
  shutdownGraceMs: number;
}

export class ConfigError extends Error {}

function parseBool(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === "") return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, not "${raw}"`);
}

function parseInteger(name: string, raw: string | undefined, fallback: number, max: number, min = 0): number {
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) > max || Number(raw) < min) {
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, not "${raw}"`);
  }
  return Number(raw);
}

const ORG_CREATION_POLICIES: readonly OrgCreationPolicy[] = ["people", "admins", "anyone"];

function parseOrgCreation(raw: string | undefined): OrgCreationPolicy {
  if (raw === undefined || raw === "") return "people";
  const policy = ORG_CREATION_POLICIES.find((p) => p === raw);
  if (!policy) throw new ConfigError(`PLATFORM_ORG_CREATION must be one of ${ORG_CREATION_POLICIES.join(", ")}, not "${raw}"`);
  return policy;
}

/** A listener address only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

function parseUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    const u = new URL(raw);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, not "${raw}"`);
  }
  return raw.replace(/\/+$/, "");
}

// The value is a secret: errors describe the format and never echo it.
function parseMasterKey(raw: string | undefined): Buffer | undefined {
  if (raw === undefined || raw === "") return undefined;
  const key = decodeMasterKey(raw);
  if (!key) {
    throw new ConfigError("PLATFORM_MASTER_KEY must be 32 bytes as base64 (e.g. `openssl rand -base64 32`) or as 64 hex digits (`openssl rand -hex 32`)");
  }
  return key;
}

function parseOidc(env: NodeJS.ProcessEnv, allowInsecure: boolean): Config["oidc"] {
  const issuer = parseUrl("PLATFORM_OIDC_ISSUER", env["PLATFORM_OIDC_ISSUER"]);
  const clientId = env["PLATFORM_OIDC_CLIENT_ID"] || "";
  if (!issuer) {
    if (clientId) throw new ConfigError("PLATFORM_OIDC_CLIENT_ID needs PLATFORM_OIDC_ISSUER");
    return undefined;
  }
  if (!clientId) throw new ConfigError("PLATFORM_OIDC_ISSUER needs PLATFORM_OIDC_CLIENT_ID");
  if (issuer.startsWith("http:") && !allowInsecure) {
    throw new ConfigError("PLATFORM_OIDC_ISSUER must be https (http only with PLATFORM_ALLOW_INSECURE_ISSUERS=true)");
  }
  const scopes = (env["PLATFORM_OIDC_SCOPES"] || "openid email profile").split(/\s+/).filter(Boolean);
  return { issuer, clientId, clientSecret: env["PLATFORM_OIDC_CLIENT_SECRET"] || "", scopes: [...new Set(["openid", ...scopes])] };
}

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const certFile = env["PLATFORM_TLS_CERT"];
  const keyFile = env["PLATFORM_TLS_KEY"];
  if (Boolean(certFile) !== Boolean(keyFile)) throw new ConfigError("PLATFORM_TLS_CERT and PLATFORM_TLS_KEY go together");
  const databaseUrl = env["DATABASE_URL"] || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL must be a postgres:// URL");
  }
  const allowInsecureIssuers = parseBool("PLATFORM_ALLOW_INSECURE_ISSUERS", env["PLATFORM_ALLOW_INSECURE_ISSUERS"], false);
  const oidc = parseOidc(env, allowInsecureIssuers);
  const host = env["HOST"] || "127.0.0.1";
  return {
    port: parseInteger("PORT", env["PORT"], 8080, 65535),
    host,
    databaseUrl,
    dataDir: resolve(env["PLATFORM_DATA_DIR"] || "./.data"),
    masterKey: parseMasterKey(env["PLATFORM_MASTER_KEY"]),
    baseUrl: parseUrl("PLATFORM_BASE_URL", env["PLATFORM_BASE_URL"]),
    authUrl: parseUrl("PLATFORM_AUTH_URL", env["PLATFORM_AUTH_URL"]),
    registryAudience: env["PLATFORM_REGISTRY_AUDIENCE"] || undefined,
    bootstrap: parseBool("PLATFORM_BOOTSTRAP", env["PLATFORM_BOOTSTRAP"], true),
    allowInsecureIssuers,
    oidc,
    devLogin: parseBool("PLATFORM_DEV_LOGIN", env["PLATFORM_DEV_LOGIN"], !oidc && isLoopbackHost(host)),
    orgCreation: parseOrgCreation(env["PLATFORM_ORG_CREATION"]),
    timeouts: {
      headersMs: parseInteger("PLATFORM_HEADERS_TIMEOUT_MS", env["PLATFORM_HEADERS_TIMEOUT_MS"], 10_000, 600_000, 100),
      requestMs: parseInteger("PLATFORM_REQUEST_TIMEOUT_MS", env["PLATFORM_REQUEST_TIMEOUT_MS"], 60_000, 3_600_000, 100),
      idleMs: parseInteger("PLATFORM_IDLE_TIMEOUT_MS", env["PLATFORM_IDLE_TIMEOUT_MS"], 60_000, 3_600_000, 100),
    },
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    logLevel: env["LOG_LEVEL"] || "info",
    shutdownGraceMs: parseInteger("PLATFORM_SHUTDOWN_GRACE_MS", env["PLATFORM_SHUTDOWN_GRACE_MS"], 10_000, 600_000),
  };
}

/** URLs that depend on the port actually bound (PORT=0 in tests). */
export interface ResolvedUrls {
  baseUrl: string;
  authUrl: string;
  registryAudience: string;
  /** Host name used in ErrorInfo domains: `iam.<serviceDomain>`. */
  serviceDomain: string;
}

export function resolveUrls(config: Config, boundPort: number): ResolvedUrls {
  const scheme = config.tls ? "https" : "http";
  const baseUrl = config.baseUrl ?? `${scheme}://localhost:${boundPort}`;
  return {
    baseUrl,
    authUrl: config.authUrl ?? baseUrl,
    registryAudience: config.registryAudience ?? `${baseUrl}/registry`,
    serviceDomain: new URL(baseUrl).hostname,
  };
}
