import { withoutTrailingSlash } from "../http/index.js";
import { randomUUID } from "node:crypto";
import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { and, eq, inArray, or } from "drizzle-orm";
import { SignJWT } from "jose";
import { exchangeIdentity, type TokenExchangeDeps, type TokenService } from "../auth/index.js";
import { takeForAddress, type PerMinuteLimit } from "../auth/exchange-limits.js";
import type { Grants } from "../authz/index.js";
import { schema, UID_SHAPES, type Database } from "../db/index.js";
import { BodyReadError, BodyTooLargeError, readBody } from "../http/body.js";
import { sendJson } from "../http/response.js";
import type { NodeRequest as Req, NodeResponse as Res, Route } from "../http/types.js";
import { parseRegistryPath } from "./paths.js";
import { REGISTRY_SIGNING_ALG, type RegistrySigner } from "./registry-keys.js";

// The registry's token endpoint (docs/design.md, "The image registry"): the distribution
// token-authentication protocol (GET with Basic credentials, and the OAuth2 password /
// refresh_token POST form), answering a short-lived registry token whose `access` claim is the
// intersection of the scopes asked for and what the caller holds.

/** Where the lead mounts the route, below the auth URL's path. */
export const REGISTRY_TOKEN_PATH = "/registry/token";
/** How long a registry token is valid: a pull or push asks again when it runs out. */
export const REGISTRY_TOKEN_TTL_SECONDS = 300;
/** Bounds of a token request (docs/design.md, "The image registry"). */
export const MAX_SCOPES = 16;
export const MAX_SCOPE_BYTES = 512;
/** The whole query string (GET) or form body (POST). */
export const MAX_TOKEN_REQUEST_BYTES = 8 * 1024;

/** The signing key of registry tokens, with the certificate chain the registry trusts (src/registry/registry-keys.ts). */

/** How a request ended, for a metric. */
export type RegistryTokenOutcome = "issued" | "invalid" | "refused" | "limited" | "error";

export interface RegistryTokenDeps {
  db: Database;
  tokens: TokenService;
  /** Audiences of the platform tokens accepted as passwords: the API base URL and the registry audience. */
  audiences: string[];
  /** The registry audience: the one `service` answered, and the tokens' `aud`. */
  service: string;
  /** This service's auth URL: the tokens' `iss`; the realm is REGISTRY_TOKEN_PATH below it. */
  authUrl: string;
  /** The token exchange, for an OIDC token given as the password of an identity (its rules, limits and events). */
  exchange: TokenExchangeDeps;
  grantsOf: (identityUid: string) => Promise<Grants>;
  signer: RegistrySigner;
  /** Requests per client address, counted before anything else. */
  limit: PerMinuteLimit;
  clock: () => Date;
  /** Why a request was refused (logged, never shown to the caller). */
  onRefused: (reason: string) => void;
  onInternalError: (cause: unknown) => void;
  onOutcome?: (outcome: RegistryTokenOutcome) => void;
}

/** The URL clients are sent to for a token: the registry's `auth.token.realm`. */
export function registryTokenRealm(authUrl: string): string {
  return `${withoutTrailingSlash(authUrl)}${REGISTRY_TOKEN_PATH}`;
}

/** One entry of the token's `access` claim (distribution's ResourceActions). */
export interface RegistryAccess {
  type: string;
  class?: string;
  name: string;
  actions: string[];
}

type RepoAction = "pull" | "push" | "delete";
const REPO_ACTIONS: readonly RepoAction[] = ["pull", "push", "delete"];
const ALL = "*";

/** A scope asked for, its repeats merged. */
interface AskedScope {
  type: "repository" | "registry";
  class: string | undefined;
  name: string;
  actions: Set<string>;
}

/** An answer other than a token: the registry's error shape, and OAuth2's for the POST form. */
class TokenRequestError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly oauth: string,
    readonly outcome: RegistryTokenOutcome,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

const invalid = (message: string, oauth = "invalid_request", code = "UNSUPPORTED") =>
  new TokenRequestError(400, code, message, oauth, "invalid");

/** What the caller is told for any credentials that were not accepted: the reason goes to the log only. */
const NOT_ACCEPTED = "the credentials were not accepted";

// C0 controls (NUL included) and DEL: nothing a client sends in these parameters holds them.
const CONTROL = /[\u0000-\u001f\u007f]/;
/** Parameters that may be given once. */
const SINGLE = ["service", "account", "grant_type", "username", "password", "refresh_token", "client_id", "offline_token", "access_type"];

interface TokenRequest {
  service: string;
  scopes: string[];
  /** The user name (free text, or an identity uid) and the secret; undefined: no credentials. */
  user: string;
  secret: string | undefined;
  /** An Authorization header that is not Basic credentials. */
  malformed: boolean;
  /** The OIDC path is open to passwords (Basic, grant_type=password), not to refresh tokens. */
  oidc: boolean;
}

function checkParams(params: URLSearchParams): void {
  const seen = new Set<string>();
  for (const [key, value] of params) {
    if (CONTROL.test(key) || CONTROL.test(value)) throw invalid(`parameter "${printable(key)}" holds a control character (NUL included)`);
    if (SINGLE.includes(key)) {
      if (seen.has(key)) throw invalid(`parameter "${key}" is given more than once`);
      seen.add(key);
    }
  }
}

const printable = (s: string) => s.replace(/[^\x20-\x7e]/g, "?").slice(0, 64);

function scopesOf(params: URLSearchParams): string[] {
  // OAuth2 lists scopes space-separated in one parameter; distribution's clients repeat the parameter.
  return params
    .getAll("scope")
    .flatMap((s) => s.split(" "))
    .filter((s) => s !== "");
}

/** Basic credentials, or undefined when they are absent; a header of another shape is credentials not accepted. */
function basicCredentials(header: string | undefined): { user: string; secret: string } | undefined | "malformed" {
  if (header === undefined) return undefined;
  if (header.length > MAX_TOKEN_REQUEST_BYTES) return "malformed";
  const m = /^Basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header);
  if (!m) return "malformed";
  const text = Buffer.from(m[1]!, "base64").toString("utf8");
  const colon = text.indexOf(":");
  if (colon === -1 || CONTROL.test(text)) return "malformed";
  return { user: text.slice(0, colon), secret: text.slice(colon + 1) };
}

async function readRequest(req: Req, url: URL): Promise<TokenRequest> {
  if (req.method === "POST") {
    const type = String(req.headers["content-type"] ?? "")
      .split(";")[0]!
      .trim()
      .toLowerCase();
    if (type !== "application/x-www-form-urlencoded") throw invalid("the body must be application/x-www-form-urlencoded");
    let body: Uint8Array;
    try {
      body = await readBody(req, MAX_TOKEN_REQUEST_BYTES);
    } catch (e) {
      if (!(e instanceof BodyTooLargeError)) throw e;
      // The rest of the body is never read: over HTTP/1.1 the connection closes after the answer.
      const close: Record<string, string> = req.httpVersionMajor === 1 ? { connection: "close" } : {};
      throw new TokenRequestError(
        400,
        "SIZE_INVALID",
        `the form is larger than ${MAX_TOKEN_REQUEST_BYTES} bytes`,
        "invalid_request",
        "invalid",
        close,
      );
    }
    const form = new URLSearchParams(new TextDecoder().decode(body));
    checkParams(form);
    const grant = form.get("grant_type");
    const request = { service: form.get("service") ?? "", scopes: scopesOf(form), malformed: false };
    if (grant === "password") {
      const user = form.get("username");
      const password = form.get("password");
      if (!user || !password) throw invalid('grant_type "password" needs username and password');
      return { ...request, user, secret: password, oidc: true };
    }
    if (grant === "refresh_token") {
      const token = form.get("refresh_token");
      if (!token) throw invalid('grant_type "refresh_token" needs refresh_token');
      return { ...request, user: form.get("username") ?? "", secret: token, oidc: false };
    }
    if (grant === null) throw invalid("grant_type is required");
    throw invalid(`grant_type "${printable(grant)}" is not supported: use "password" or "refresh_token"`, "unsupported_grant_type");
  }
  const raw = req.url ?? "";
  const q = raw.indexOf("?");
  if (q !== -1 && Buffer.byteLength(raw.slice(q + 1)) > MAX_TOKEN_REQUEST_BYTES) {
    throw invalid(`the query is longer than ${MAX_TOKEN_REQUEST_BYTES} bytes`, "invalid_request", "SIZE_INVALID");
  }
  checkParams(url.searchParams);
  const creds = basicCredentials(req.headers["authorization"]);
  const given = creds === "malformed" ? undefined : creds;
  return {
    service: url.searchParams.get("service") ?? "",
    scopes: scopesOf(url.searchParams),
    user: given?.user ?? "",
    secret: given?.secret,
    malformed: creds === "malformed",
    oidc: true,
  };
}

// type[(class)]:name:actions. The name may hold colons in distribution's grammar (a host and
// port); no registry path does, and parseRegistryPath refuses them.
const SCOPE = /^([a-z]+)(?:\(([a-z0-9]{1,32})\))?:(.+):([^:]*)$/;

function parseScopes(raw: string[]): AskedScope[] {
  if (raw.length > MAX_SCOPES) throw invalid(`at most ${MAX_SCOPES} scopes may be asked for at once; ${raw.length} were`, "invalid_scope");
  const merged = new Map<string, AskedScope>();
  for (const text of raw) {
    if (Buffer.byteLength(text) > MAX_SCOPE_BYTES) throw invalid(`a scope is longer than ${MAX_SCOPE_BYTES} bytes`, "invalid_scope");
    const m = SCOPE.exec(text);
    if (!m) throw invalid(`scope "${printable(text)}" is not of the form <type>:<name>:<actions>`, "invalid_scope");
    const [, type, cls, name, list] = m as unknown as [string, string, string | undefined, string, string];
    const actions = list.split(",");
    if (actions.some((a) => a === "")) throw invalid(`scope "${printable(text)}" names no action, or an empty one`, "invalid_scope");
    if (type === "repository") {
      const unknown = actions.find((a) => a !== ALL && !(REPO_ACTIONS as readonly string[]).includes(a));
      if (unknown !== undefined)
        throw invalid(`scope "${printable(text)}": unknown action "${printable(unknown)}" (pull, push, delete or *)`, "invalid_scope");
      if (!parseRegistryPath(name)) {
        throw invalid(
          `scope "${printable(text)}": "${printable(name)}" is not a registry path <group uid with / written ->/<repo name>`,
          "invalid_scope",
          "NAME_INVALID",
        );
      }
    } else if (type === "registry") {
      if (cls !== undefined || name !== "catalog" || actions.some((a) => a !== ALL))
        throw invalid(`scope "${printable(text)}": the one registry scope is registry:catalog:*`, "invalid_scope");
    } else {
      throw invalid(`scope "${printable(text)}": unknown resource type "${printable(type)}" (repository or registry)`, "invalid_scope");
    }
    const key = `${type}\n${cls ?? ""}\n${name}`;
    const scope = merged.get(key) ?? { type, class: cls, name, actions: new Set<string>() };
    for (const a of actions) scope.actions.add(a);
    merged.set(key, scope);
  }
  return [...merged.values()];
}

/**
 * What `grants` allow of `asked` (docs/design.md, "The image registry"): never more than was asked,
 * and no error for less. At a repo the check runs at its uid, or at its group's where it does
 * not exist yet (then push also needs repo.create there, since the push makes it).
 */
async function grantedAccess(db: Database, grants: Grants, asked: AskedScope[]): Promise<RegistryAccess[]> {
  const paths = new Map(asked.filter((s) => s.type === "repository").map((s) => [s.name, parseRegistryPath(s.name)!]));
  const { repos } = schema;
  const rows = paths.size
    ? await db
        .select({ uid: repos.uid, parentUid: repos.parentUid, name: repos.name })
        .from(repos)
        .where(or(...[...paths.values()].map((p) => and(eq(repos.parentUid, p.groupUid), eq(repos.name, p.repoName)))))
    : [];
  const uidOf = new Map(rows.map((r) => [`${r.parentUid}\n${r.name}`, r.uid]));
  // A path whose repo does not exist grants only where its group does: a uid of no group (a
  // deleted one, a repo's, an identity's) would let a push land where the catalog cannot follow.
  const missing = [...new Set([...paths.values()].filter((p) => !uidOf.has(`${p.groupUid}\n${p.repoName}`)).map((p) => p.groupUid))];
  const groups = missing.length
    ? new Set(
        (await db.select({ uid: schema.groups.uid }).from(schema.groups).where(inArray(schema.groups.uid, missing))).map((g) => g.uid),
      )
    : new Set<string>();
  return asked.map((scope) => {
    const entry = (actions: string[]): RegistryAccess => ({
      type: scope.type,
      ...(scope.class ? { class: scope.class } : {}),
      name: scope.name,
      actions,
    });
    if (scope.type === "registry") {
      // The registry's catalog lists every repository and cannot filter: only those who may list
      // every repo (repo.list at the root) are given it.
      return entry(grants.holdsAtRoot("repo.list") ? [ALL] : []);
    }
    const { groupUid, repoName } = paths.get(scope.name)!;
    const repoUid = uidOf.get(`${groupUid}\n${repoName}`);
    if (repoUid === undefined && !groups.has(groupUid)) return entry([]);
    const at = repoUid ?? groupUid;
    const holds: Record<RepoAction, boolean> = {
      pull: grants.holdsAt("repo.blobs.get", at),
      push:
        grants.holdsAt("tag.create", at) &&
        grants.holdsAt("tag.update", at) &&
        (repoUid !== undefined || grants.holdsAt("repo.create", groupUid)),
      delete: grants.holdsAt("tag.delete", at),
    };
    const wanted = scope.actions.has(ALL) ? REPO_ACTIONS : REPO_ACTIONS.filter((a) => scope.actions.has(a));
    const actions: string[] = wanted.filter((a) => holds[a]);
    if (scope.actions.has(ALL) && actions.length === REPO_ACTIONS.length) actions.push(ALL);
    return entry(actions);
  });
}

/** The registry token endpoint (GET and POST), mounted at REGISTRY_TOKEN_PATH below the auth URL. */
export function registryTokenRoute(deps: RegistryTokenDeps): Route {
  const realm = registryTokenRealm(deps.authUrl);
  const refused = (reason: string) => {
    deps.onRefused(reason);
    return new TokenRequestError(401, "UNAUTHORIZED", NOT_ACCEPTED, "invalid_grant", "refused");
  };

  /** The identity the credentials name: a platform token, or an identity uid and an OIDC token its claimMatch accepts. */
  async function identityOf(request: TokenRequest, clientAddress: string | undefined): Promise<string> {
    const { user, secret } = request;
    if (request.malformed) throw refused("the Authorization header is not Basic credentials");
    if (secret === undefined) {
      deps.onRefused("no credentials");
      throw new TokenRequestError(401, "UNAUTHORIZED", "authentication required", "invalid_request", "refused");
    }
    if (secret === "") throw refused("empty password");
    let subject: string | undefined;
    try {
      subject = (await deps.tokens.verify(secret, deps.audiences)).subject;
    } catch (e) {
      if (!(e instanceof ConnectError && e.code === Code.Unauthenticated)) throw e;
    }
    if (subject !== undefined) {
      // Docker needs a user name, so any will do; one shaped as an identity uid must be the token's.
      if (UID_SHAPES.identity.test(user) && user !== subject)
        throw refused("the user name is another identity's uid than the token's subject");
      return subject;
    }
    // Only identities held by a group take OIDC tokens (the exchange's rule).
    if (!request.oidc || !UID_SHAPES.child.test(user))
      throw refused("the password is not a platform token, and the user name is no workload identity's uid");
    try {
      return await exchangeIdentity(deps.exchange, { audiences: [deps.service], identityUid: user, oidcToken: secret, clientAddress });
    } catch (e) {
      if (e instanceof ConnectError && e.code === Code.Unauthenticated) throw refused("the OIDC token was not accepted for the identity");
      throw e;
    }
  }

  async function issue(req: Req, url: URL, res: Res): Promise<void> {
    await takeForAddress(deps.limit, req.socket.remoteAddress);
    const request = await readRequest(req, url);
    if (!request.service) throw invalid("service is required");
    if (request.service !== deps.service) throw invalid(`service "${printable(request.service)}" is not this registry's (${deps.service})`);
    const asked = parseScopes(request.scopes);
    const identityUid = await identityOf(request, req.socket.remoteAddress);
    const grants = await deps.grantsOf(identityUid);
    // A deleted identity's tokens stop working here as on the API (docs/security.md, "Revocation").
    if (!grants.identity.exists) throw refused("the identity no longer exists");
    const access = await grantedAccess(deps.db, grants, asked);
    const key = await deps.signer.current();
    const now = Math.floor(deps.clock().getTime() / 1000);
    const token = await new SignJWT({ access: access as unknown as JsonValue[] })
      .setProtectedHeader({ alg: REGISTRY_SIGNING_ALG, typ: "JWT", kid: key.kid, x5c: key.x5c })
      .setIssuer(deps.authUrl)
      .setSubject(identityUid)
      .setAudience(deps.service)
      .setIssuedAt(now)
      .setNotBefore(now)
      .setExpirationTime(now + REGISTRY_TOKEN_TTL_SECONDS)
      .setJti(randomUUID())
      .sign(key.sign);
    const issuedAt = new Date(now * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    deps.onOutcome?.("issued");
    sendJson(
      res,
      200,
      { token, access_token: token, expires_in: REGISTRY_TOKEN_TTL_SECONDS, issued_at: issuedAt },
      { "cache-control": "no-store" },
    );
  }

  function fail(res: Res, e: unknown, form: boolean): void {
    const error = asTokenError(e, deps.onInternalError);
    if (!error) return;
    deps.onOutcome?.(error.outcome);
    const headers: Record<string, string> = { "cache-control": "no-store", ...error.headers };
    // Docker asks for a login on this challenge (the distribution token-authentication spec).
    if (error.status === 401) headers["www-authenticate"] = `Basic realm="${realm}"`;
    const body: Record<string, JsonValue> = { errors: [{ code: error.code, message: error.message, detail: null }] };
    if (form) Object.assign(body, { error: error.oauth, error_description: error.message });
    sendJson(res, error.status, body, headers);
  }

  return {
    methods: ["GET", "POST"],
    serve: async (req, res, url) => {
      try {
        await issue(req, url, res);
      } catch (e) {
        fail(res, e, req.method === "POST");
      }
    },
  };
}

/** Any failure as an answer; undefined when there is nobody to answer (the client went away mid-body). */
function asTokenError(e: unknown, onInternalError: (cause: unknown) => void): TokenRequestError | undefined {
  if (e instanceof TokenRequestError) return e;
  if (e instanceof BodyReadError) return undefined;
  if (e instanceof ConnectError) {
    if (e.code === Code.ResourceExhausted) {
      const retry = e.metadata.get("retry-after");
      return new TokenRequestError(
        429,
        "TOOMANYREQUESTS",
        e.rawMessage,
        "invalid_request",
        "limited",
        retry ? { "retry-after": retry } : {},
      );
    }
    if (e.code === Code.InvalidArgument) return invalid(e.rawMessage);
  }
  onInternalError(e);
  return new TokenRequestError(500, "UNKNOWN", "internal error", "server_error", "error");
}
