import { withoutTrailingSlash } from "../http/url.js";
import { resolve } from "node:path";
import type { OrgCreationPolicy } from "../authz/authorizer.js";
import { isLoopbackHost } from "../auth/login/dev-provider.js";
import { PlatformAdmins } from "../auth/login/platform-admins.js";
import { decodeMasterKey } from "../crypto/index.js";
import { DEFAULT_REGISTRY_ROTATE_AFTER_MS, MAX_REGISTRY_ROTATE_AFTER_MS, MIN_REGISTRY_ROTATE_AFTER_MS } from "../registry/key-rotation.js";
import { DEFAULT_EVENT_STREAM_LIMITS as STREAMS, type EventStreamLimits } from "../services/events/stream-limits.js";

/** Everything the server reads from its environment (docs/operations.md, "Configuration"). */
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
  /** The global upstream OIDC provider of browser login (docs/sign-in.md, "Signing in"); undefined: none. */
  oidc: { issuer: string; clientId: string; clientSecret: string; scopes: string[] } | undefined;
  /** PLATFORM_ADMINS: people of that upstream made `owner` at the root when they sign in. */
  platformAdmins: PlatformAdmins;
  /**
   * Serve the development sign-in provider (anyone signs in as any name).
   * Default: only with no upstream configured, on a loopback listener whose
   * base and auth URLs are loopback too (devLoginDefault).
   */
  devLogin: boolean;
  /**
   * Development sign-in is on by default, not by PLATFORM_DEV_LOGIN=true: its
   * pages then answer only requests that reached this machine directly (a
   * loopback Host, no proxy's headers), since a reverse proxy in front of a
   * loopback listener looks just like a developer's machine from here
   * (docs/security.md, "Development settings").
   */
  devLoginLocalOnly: boolean;
  /**
   * PLATFORM_TRUSTED_IDP_HOSTS: host names of organizations' identity
   * providers the operator vouches for; a login through any other goes
   * through a page naming its host first (docs/security.md, "Signing in at
   * an organization's provider").
   */
  trustedIdpHosts: readonly string[];
  /** Who may found organizations (PLATFORM_ORG_CREATION). */
  orgCreation: OrgCreationPolicy;
  /**
   * PLATFORM_CORS_ORIGINS: the browser origins (scheme://host[:port], as
   * browsers send them) allowed to call the API cross-origin; empty: none
   * (docs/security.md, "Browser origins (CORS)").
   */
  corsOrigins: readonly string[];
  /** Connection timeouts (docs/operations.md, "Configuration"): slow or idle clients cannot hold sockets. */
  timeouts: { headersMs: number; requestMs: number; idleMs: number };
  tls: { certFile: string; keyFile: string } | undefined;
  logLevel: string;
  /**
   * PLATFORM_SHUTDOWN_TIMEOUT: how long SIGTERM (or SIGINT) may take, start to exit. In-flight
   * requests get all of it but a closing reserve (drainMs(): docs/security.md, "Shutdown and logging").
   */
  shutdownTimeoutMs: number;
  /** Events (docs/events.md, "Events and webhooks"). */
  events: {
    /** PLATFORM_EVENT_RETENTION: events older than this are pruned in the background. */
    retentionMs: number;
    /** PLATFORM_WEBHOOK_RETRY_FOR: how long a failing delivery is retried before it is marked failed. */
    retryForMs: number;
    /** PLATFORM_WEBHOOK_BACKOFF_MS: the first retry's delay; each next one doubles it, up to an hour. */
    backoffMs: number;
    /** PLATFORM_WEBHOOK_TIMEOUT_MS: how long one delivery may take (a claim's lease is twice this, plus a second). */
    timeoutMs: number;
    /**
     * PLATFORM_MAX_EVENT_STREAMS, _PER_ORG and _PER_IDENTITY: open WatchEvents streams one server
     * holds in all, that may read one organization's events, and that one identity may hold
     * (docs/security.md, "Event streams").
     */
    streams: EventStreamLimits;
  };
  /** Outbound budgets and the token exchange's rate limits (docs/security.md, "Outbound budgets"). */
  outbound: OutboundConfig;
  /** The image registry this server issues tokens for and whose configuration it writes (docs/registry.md, "Running the image registry"). */
  registry: RegistryConfig;
}

export interface RegistryConfig {
  /** PLATFORM_REGISTRY_ADDR: `host:port` the registry listens on (its `http.addr`). */
  addr: string;
  /** PLATFORM_REGISTRY_STORAGE: the registry's filesystem storage. Default `<data dir>/registry/storage`. */
  storageDir: string;
  /** Where the registry's `config.yml` and `rootcerts.pem` are written: `<data dir>/registry`. */
  configDir: string;
  /** PLATFORM_REGISTRY_NOTIFY_URL: where the registry reaches this server. Default `<auth URL>/registry/notifications`. */
  notificationsUrl: string | undefined;
  /** PLATFORM_REGISTRY_KEY_ROTATION: how long the registry signing key signs before the next takes over. */
  keyRotationMs: number;
  /** PLATFORM_REGISTRY_TOKENS_PER_ADDRESS: registry token requests per minute from one client address; 0: no limit. */
  tokensPerAddress: number;
}

function parseRegistry(env: NodeJS.ProcessEnv, dataDir: string): RegistryConfig {
  const addr = env["PLATFORM_REGISTRY_ADDR"] || "127.0.0.1:5000";
  // host:port or [v6]:port; the host may be empty (every interface), as Go's listeners take it.
  if (!/^(?:[A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\]):[0-9]{1,5}$/.test(addr) || Number(addr.slice(addr.lastIndexOf(":") + 1)) > 65535) {
    throw new ConfigError(`PLATFORM_REGISTRY_ADDR must be host:port, not "${addr}"`);
  }
  // 90 days by default: the registry reads its certificates only at start, so it must be restarted once in each period.
  const rotation = parseDuration(
    "PLATFORM_REGISTRY_KEY_ROTATION",
    env["PLATFORM_REGISTRY_KEY_ROTATION"],
    DEFAULT_REGISTRY_ROTATE_AFTER_MS,
    MIN_REGISTRY_ROTATE_AFTER_MS,
  );
  if (rotation > MAX_REGISTRY_ROTATE_AFTER_MS) throw new ConfigError("PLATFORM_REGISTRY_KEY_ROTATION must be at most 1825d");
  return {
    addr,
    storageDir: resolve(env["PLATFORM_REGISTRY_STORAGE"] || resolve(dataDir, "registry", "storage")),
    configDir: resolve(dataDir, "registry"),
    notificationsUrl: parseUrl("PLATFORM_REGISTRY_NOTIFY_URL", env["PLATFORM_REGISTRY_NOTIFY_URL"]),
    keyRotationMs: rotation,
    tokensPerAddress: parseInteger("PLATFORM_REGISTRY_TOKENS_PER_ADDRESS", env["PLATFORM_REGISTRY_TOKENS_PER_ADDRESS"], 600, 1_000_000),
  };
}

export interface OutboundConfig {
  /** PLATFORM_EGRESS_UPSTREAM_IN_FLIGHT: the deployment's sign-in provider's requests in flight, held for it alone. */
  upstreamInFlight: number;
  /** PLATFORM_EGRESS_ORG_IN_FLIGHT: one organization's, for its identity providers and again for its identities' issuers. */
  organizationInFlight: number;
  /** PLATFORM_EGRESS_ORGS_IN_FLIGHT: all organizations' together, for identity providers and again for issuers. */
  organizationsInFlight: number;
  /** PLATFORM_STS_RATE_PER_ADDRESS: token exchanges per minute from one client address (an IPv6 /64); 0: no limit. */
  exchangesPerAddress: number;
  /** PLATFORM_STS_RATE_PER_IDENTITY: refused token exchanges per minute naming one identity before it is held to cached keys; 0: no limit. */
  exchangesPerIdentity: number;
  /** PLATFORM_LOGIN_RATE_PER_ADDRESS: sign-in starts and callbacks per minute from one client address (an IPv6 /64); 0: no limit. */
  loginsPerAddress: number;
  /** PLATFORM_LOGIN_IN_FLIGHT_PER_ADDRESS: one client address's sign-in requests to a provider in flight, within each sign-in budget. */
  signInInFlightPerAddress: number;
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

/** Whether URL `url` (undefined: the default, http://localhost:<port>) names this machine only. */
function isLoopbackUrl(url: string | undefined): boolean {
  return url === undefined || isLoopbackHost(new URL(url).hostname);
}

/**
 * The development provider signs anyone in as anyone, so it is on by default
 * only where nobody else can reach it: no upstream, a loopback listener, and
 * base and auth URLs on loopback too. A loopback listener behind a reverse
 * proxy with a public URL is reachable by everyone the proxy serves.
 */
export function devLoginDefault(c: Pick<Config, "oidc" | "host" | "baseUrl" | "authUrl">): boolean {
  return !c.oidc && isLoopbackHost(c.host) && isLoopbackUrl(c.baseUrl) && isLoopbackUrl(c.authUrl);
}

/**
 * PLATFORM_TRUSTED_IDP_HOSTS: comma-separated host names (or IP literals),
 * matched exactly against the host of an organization's identity provider;
 * no wildcards, ports, schemes or paths. Stored as the URL standard
 * serialises a host (lower-case, punycode).
 */
export function parseTrustedIdpHosts(raw: string | undefined): string[] {
  const hosts = new Set<string>();
  for (const part of (raw ?? "").split(",")) {
    const entry = part.trim();
    if (entry === "") continue;
    const bad = (why: string) =>
      new ConfigError(`PLATFORM_TRUSTED_IDP_HOSTS: ${JSON.stringify(entry.slice(0, 200))} is not a host name: ${why}`);
    if (/[\u0000-\u0020\u007f]/.test(entry)) throw bad("it contains a space or a control character");
    if (entry.includes("*")) throw bad("wildcards are not supported; list each host");
    if (/[/:@?#]/.test(entry.replace(/^\[[0-9a-fA-F:.]+\]$/, ""))) throw bad("give the host alone, without scheme, port, path or user");
    let hostname: string;
    try {
      hostname = new URL(`https://${entry}`).hostname;
    } catch {
      throw bad("the host is not valid");
    }
    if (hostname === "") throw bad("the host is missing");
    hosts.add(hostname);
  }
  return [...hosts];
}

/**
 * One line for each development-only setting in force, logged as a warning at
 * every start (docs/security.md, "Development settings"): none of them
 * belongs in production, and a setting inherited from a developer's .env is
 * easy to miss.
 */
export function developmentWarnings(
  c: Pick<Config, "oidc" | "host" | "baseUrl" | "authUrl" | "devLogin" | "allowInsecureIssuers">,
): string[] {
  const warnings: string[] = [];
  if (c.devLogin) {
    warnings.push(
      devLoginDefault({ ...c, oidc: undefined })
        ? "development sign-in is on (PLATFORM_DEV_LOGIN): anyone who reaches /oauth signs in as any name they type; for development on this machine only"
        : "DEVELOPMENT SIGN-IN IS ON FOR A SERVER OTHERS CAN REACH (PLATFORM_DEV_LOGIN=true with a non-loopback HOST, PLATFORM_BASE_URL or PLATFORM_AUTH_URL): anyone who reaches /oauth signs in as any name they type and may found organizations; set PLATFORM_DEV_LOGIN=false and configure PLATFORM_OIDC_ISSUER",
    );
  }
  if (c.allowInsecureIssuers) {
    warnings.push(
      "development egress is on (PLATFORM_ALLOW_INSECURE_ISSUERS): OIDC issuers, sign-in providers and webhook sinks may be http:// and on this machine's loopback addresses; for development only",
    );
  }
  return warnings;
}

function parseUrl(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === "") return undefined;
  try {
    const u = new URL(raw);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
  } catch {
    throw new ConfigError(`${name} must be an http(s) URL, not "${raw}"`);
  }
  return withoutTrailingSlash(raw);
}

// The value is a secret: errors describe the format and never echo it.
function parseMasterKey(raw: string | undefined): Buffer | undefined {
  if (raw === undefined || raw === "") return undefined;
  const key = decodeMasterKey(raw);
  if (!key) {
    throw new ConfigError(
      "PLATFORM_MASTER_KEY must be 32 bytes as base64 (e.g. `openssl rand -base64 32`) or as 64 hex digits (`openssl rand -hex 32`)",
    );
  }
  return key;
}

/**
 * PLATFORM_CORS_ORIGINS: comma-separated exact origins. Each is stored as
 * the URL standard serialises an origin (lower-case host, punycode, no
 * default port), which is what a browser's Origin header carries, so a
 * request matches by plain string equality. No wildcards, not even `*`
 * (docs/security.md, "Browser origins (CORS)", says why).
 */
export function parseCorsOrigins(raw: string | undefined): string[] {
  if (raw === undefined) return [];
  const origins = new Set<string>();
  for (const part of raw.split(",")) {
    const entry = part.trim();
    if (entry === "") continue;
    const bad = (why: string) =>
      new ConfigError(`PLATFORM_CORS_ORIGINS: ${JSON.stringify(entry.slice(0, 200))} is not an origin (scheme://host[:port]): ${why}`);
    // Control characters (NUL included) and inner spaces never belong to an origin.
    if (/[\u0000-\u0020\u007f]/.test(entry)) throw bad("it contains a space or a control character");
    if (entry.includes("*")) throw bad("wildcards are not supported; list each origin");
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)(.*)$/.exec(entry);
    if (!m) throw bad("it must start with http:// or https://");
    const [, scheme = "", authority = "", rest = ""] = m;
    if (!/^https?$/i.test(scheme)) throw bad("the scheme must be http or https");
    if (authority.includes("@")) throw bad("it must not carry a user name or password");
    let url: URL;
    try {
      url = new URL(`${scheme}://${authority}`);
    } catch {
      throw bad("the host is not valid");
    }
    if (url.hostname === "") throw bad("the host is missing");
    if (rest !== "") throw bad(`it must not have a path, query or fragment (write "${url.origin}")`);
    origins.add(url.origin);
  }
  return [...origins];
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

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90d`, `12h`, `30m`, `45s` or `500ms`. */
function parseDuration(name: string, raw: string | undefined, fallback: number, minMs: number): number {
  if (raw === undefined || raw === "") return fallback;
  const m = /^(\d{1,9})(ms|s|m|h|d)$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : NaN;
  if (!Number.isFinite(ms) || ms < minMs)
    throw new ConfigError(`${name} must be a duration such as 90d, 12h, 30m or 45s, at least ${minMs} ms, not "${raw}"`);
  return ms;
}

function parseOutbound(env: NodeJS.ProcessEnv): OutboundConfig {
  const perOrganization = parseInteger("PLATFORM_EGRESS_ORG_IN_FLIGHT", env["PLATFORM_EGRESS_ORG_IN_FLIGHT"], 4, 1000, 1);
  const organizations = parseInteger("PLATFORM_EGRESS_ORGS_IN_FLIGHT", env["PLATFORM_EGRESS_ORGS_IN_FLIGHT"], 64, 10_000, 1);
  if (perOrganization > organizations) {
    throw new ConfigError(
      `PLATFORM_EGRESS_ORG_IN_FLIGHT (${perOrganization}) must not exceed PLATFORM_EGRESS_ORGS_IN_FLIGHT (${organizations})`,
    );
  }
  return {
    upstreamInFlight: parseInteger("PLATFORM_EGRESS_UPSTREAM_IN_FLIGHT", env["PLATFORM_EGRESS_UPSTREAM_IN_FLIGHT"], 16, 1000, 1),
    organizationInFlight: perOrganization,
    organizationsInFlight: organizations,
    exchangesPerAddress: parseInteger("PLATFORM_STS_RATE_PER_ADDRESS", env["PLATFORM_STS_RATE_PER_ADDRESS"], 120, 1_000_000),
    exchangesPerIdentity: parseInteger("PLATFORM_STS_RATE_PER_IDENTITY", env["PLATFORM_STS_RATE_PER_IDENTITY"], 600, 1_000_000),
    loginsPerAddress: parseInteger("PLATFORM_LOGIN_RATE_PER_ADDRESS", env["PLATFORM_LOGIN_RATE_PER_ADDRESS"], 60, 1_000_000),
    signInInFlightPerAddress: parseInteger("PLATFORM_LOGIN_IN_FLIGHT_PER_ADDRESS", env["PLATFORM_LOGIN_IN_FLIGHT_PER_ADDRESS"], 2, 1000, 1),
  };
}

/**
 * 25 s: below Kubernetes' default 30 s between SIGTERM and SIGKILL, so the server exits on its
 * own, its last log lines written, rather than being killed mid-close.
 */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 25_000;

function parseShutdownTimeout(env: NodeJS.ProcessEnv): number {
  // The one shutdown setting: the old drain setting meant a part of it, and is refused rather than ignored.
  if (env["PLATFORM_SHUTDOWN_GRACE_MS"] !== undefined) {
    throw new ConfigError(
      "PLATFORM_SHUTDOWN_GRACE_MS is replaced by PLATFORM_SHUTDOWN_TIMEOUT, the whole shutdown's deadline (a duration such as 25s)",
    );
  }
  const ms = parseDuration("PLATFORM_SHUTDOWN_TIMEOUT", env["PLATFORM_SHUTDOWN_TIMEOUT"], DEFAULT_SHUTDOWN_TIMEOUT_MS, 100);
  if (ms > 3_600_000) throw new ConfigError(`PLATFORM_SHUTDOWN_TIMEOUT must be at most 1h, not "${env["PLATFORM_SHUTDOWN_TIMEOUT"]}"`);
  return ms;
}

/**
 * How long of a shutdown in-flight requests and webhook deliveries get: all of it but a fifth,
 * at most 5 s, kept for closing the store and writing the last log lines.
 */
export function drainMs(shutdownTimeoutMs: number): number {
  return shutdownTimeoutMs - Math.min(5_000, Math.floor(shutdownTimeoutMs / 5));
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
  const baseUrl = parseUrl("PLATFORM_BASE_URL", env["PLATFORM_BASE_URL"]);
  const authUrl = parseUrl("PLATFORM_AUTH_URL", env["PLATFORM_AUTH_URL"]);
  const devLogin = parseBool("PLATFORM_DEV_LOGIN", env["PLATFORM_DEV_LOGIN"], devLoginDefault({ oidc, host, baseUrl, authUrl }));
  const dataDir = resolve(env["PLATFORM_DATA_DIR"] || "./.data");
  return {
    port: parseInteger("PORT", env["PORT"], 8080, 65535),
    host,
    databaseUrl,
    dataDir,
    masterKey: parseMasterKey(env["PLATFORM_MASTER_KEY"]),
    baseUrl,
    authUrl,
    registryAudience: env["PLATFORM_REGISTRY_AUDIENCE"] || undefined,
    bootstrap: parseBool("PLATFORM_BOOTSTRAP", env["PLATFORM_BOOTSTRAP"], true),
    allowInsecureIssuers,
    oidc,
    platformAdmins: PlatformAdmins.parse(env["PLATFORM_ADMINS"], oidc?.issuer, (message) => new ConfigError(message)),
    devLogin,
    devLoginLocalOnly: devLogin && !env["PLATFORM_DEV_LOGIN"],
    trustedIdpHosts: parseTrustedIdpHosts(env["PLATFORM_TRUSTED_IDP_HOSTS"]),
    orgCreation: parseOrgCreation(env["PLATFORM_ORG_CREATION"]),
    corsOrigins: parseCorsOrigins(env["PLATFORM_CORS_ORIGINS"]),
    timeouts: {
      headersMs: parseInteger("PLATFORM_HEADERS_TIMEOUT_MS", env["PLATFORM_HEADERS_TIMEOUT_MS"], 10_000, 600_000, 100),
      requestMs: parseInteger("PLATFORM_REQUEST_TIMEOUT_MS", env["PLATFORM_REQUEST_TIMEOUT_MS"], 60_000, 3_600_000, 100),
      idleMs: parseInteger("PLATFORM_IDLE_TIMEOUT_MS", env["PLATFORM_IDLE_TIMEOUT_MS"], 60_000, 3_600_000, 100),
    },
    tls: certFile && keyFile ? { certFile, keyFile } : undefined,
    logLevel: env["LOG_LEVEL"] || "info",
    shutdownTimeoutMs: parseShutdownTimeout(env),
    events: {
      retentionMs: parseDuration("PLATFORM_EVENT_RETENTION", env["PLATFORM_EVENT_RETENTION"], 90 * DURATION_UNITS["d"]!, 1000),
      retryForMs: parseDuration("PLATFORM_WEBHOOK_RETRY_FOR", env["PLATFORM_WEBHOOK_RETRY_FOR"], 24 * DURATION_UNITS["h"]!, 1000),
      backoffMs: parseInteger("PLATFORM_WEBHOOK_BACKOFF_MS", env["PLATFORM_WEBHOOK_BACKOFF_MS"], 1000, 3_600_000, 10),
      timeoutMs: parseInteger("PLATFORM_WEBHOOK_TIMEOUT_MS", env["PLATFORM_WEBHOOK_TIMEOUT_MS"], 10_000, 300_000, 100),
      streams: {
        perServer: parseInteger("PLATFORM_MAX_EVENT_STREAMS", env["PLATFORM_MAX_EVENT_STREAMS"], STREAMS.perServer, 100_000, 1),
        perOrganization: parseInteger(
          "PLATFORM_MAX_EVENT_STREAMS_PER_ORG",
          env["PLATFORM_MAX_EVENT_STREAMS_PER_ORG"],
          STREAMS.perOrganization,
          100_000,
          1,
        ),
        perIdentity: parseInteger(
          "PLATFORM_MAX_EVENT_STREAMS_PER_IDENTITY",
          env["PLATFORM_MAX_EVENT_STREAMS_PER_IDENTITY"],
          STREAMS.perIdentity,
          100_000,
          1,
        ),
      },
    },
    outbound: parseOutbound(env),
    registry: parseRegistry(env, dataDir),
  };
}

/** URLs that depend on the port actually bound (PORT=0 in tests). */
export interface ResolvedUrls {
  baseUrl: string;
  authUrl: string;
  registryAudience: string;
  /** Host name used in ErrorInfo domains: `<area>.<serviceDomain>` (docs/design.md, "Errors"). */
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
