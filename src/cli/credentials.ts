import { ApiClient, uidPath } from "./api-client.js";
import type { ConfigStore, IdentityTokenSource, TokenEntry } from "./config-store.js";
import { discoverAuthUrl } from "./discovery.js";
import { CliError, EXIT } from "./errors.js";
import { exchangeIdentityToken, readIdentityToken } from "./token-exchange.js";

/** A token this close to its expiry counts as expired: it could lapse in flight. */
export const EXPIRY_MARGIN_MS = 30_000;

/** The claims of a JWT, unverified (only shown to the user; the server verifies). */
export function tokenClaims(token: string): { sub?: string; exp?: number } {
  try {
    const claims: unknown = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString("utf8"));
    return typeof claims === "object" && claims !== null ? (claims as { sub?: string; exp?: number }) : {};
  } catch {
    return {};
  }
}

// Only for showing a name: a slow server must not hold up a login that already succeeded.
const NAME_LOOKUP_TIMEOUT_MS = 5_000;

/**
 * The display name of the identity `token` belongs to, read from the API (the
 * token carries only its uid), or undefined when the identity may not read
 * itself (a person with no roles yet) or the API does not answer.
 */
export async function identityName(api: string, token: string, uid: string | undefined): Promise<string | undefined> {
  if (!uid) return undefined;
  try {
    const identity = await new ApiClient(api, () => Promise.resolve(token)).request("GET", `/iam/v2beta1/identities/${uidPath(uid)}`, {
      timeoutMs: NAME_LOOKUP_TIMEOUT_MS,
    });
    return typeof identity["name"] === "string" && identity["name"] ? identity["name"] : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `Ada Lovelace (identity 1a2b…, <notes>)`, or `identity 1a2b… (<notes>)` when
 * the name is unknown: the name for people, the uid for the next command.
 */
export function describeIdentity(uid: string | undefined, name: string | undefined, notes: string[] = []): string {
  const id = `identity ${uid ?? "?"}`;
  if (name) return `${name} (${[id, ...notes].join(", ")})`;
  return notes.length ? `${id} (${notes.join(", ")})` : id;
}

export function isFresh(entry: TokenEntry, now = Date.now()): boolean {
  return Date.parse(entry.expiry) - EXPIRY_MARGIN_MS > now;
}

/** Exchanges the workload's OIDC token (re-reading its file) and stores the new API token. */
export async function exchangeWorkload(
  store: ConfigStore,
  api: string,
  workload: { identity: string; identityToken: IdentityTokenSource; audience: string },
): Promise<TokenEntry> {
  const oidcToken = await readIdentityToken(workload.identityToken);
  const authUrl = await discoverAuthUrl(api);
  const minted = await exchangeIdentityToken(authUrl, workload.audience, workload.identity, oidcToken);
  const entry: TokenEntry = { ...minted, kind: "workload", ...workload };
  await store.saveToken(api, entry);
  return entry;
}

export function notLoggedIn(api: string): CliError {
  return new CliError(`not logged in to ${api}: run platformctl auth login`, EXIT.auth);
}

/**
 * The API token to send: $PLATFORM_TOKEN when set; else the stored one while
 * fresh; a workload's is renewed by exchanging its OIDC token again; an
 * expired browser login has to log in again. `refused` is a token the API has
 * just refused as expired (a long stream's): the stored one is not fresh if it is that one.
 */
export async function currentToken(store: ConfigStore, api: string, env: NodeJS.ProcessEnv, refused?: string): Promise<string> {
  if (env["PLATFORM_TOKEN"]) return env["PLATFORM_TOKEN"];
  const entry = await store.token(api);
  if (!entry) throw notLoggedIn(api);
  if (isFresh(entry) && entry.token !== refused) return entry.token;
  if (entry.kind === "workload" && entry.identity && entry.identityToken) {
    const renewed = await exchangeWorkload(store, api, {
      identity: entry.identity,
      identityToken: entry.identityToken,
      audience: entry.audience ?? api,
    });
    return renewed.token;
  }
  throw new CliError("token expired: run platformctl auth login", EXIT.auth);
}
