import type { IncomingHttpHeaders } from "node:http";
import { LoginError } from "./login-error.js";
import { escapeHtml, page } from "./login-pages.js";
import type { SignedInPerson } from "./upstream.js";

const USERNAME = /^[a-z0-9._-]{1,64}$/;

/**
 * The built-in development provider: whoever types a username is signed in
 * as `{auth_url}/dev` + that username. It checks nothing, so it is on only
 * when no upstream is configured or PLATFORM_DEV_LOGIN=true.
 */
export function devIssuer(authUrl: string): string {
  return `${authUrl}/dev`;
}

export function devPerson(authUrl: string, username: string): SignedInPerson {
  if (!USERNAME.test(username)) {
    throw new LoginError("invalid_request", "the username must be 1 to 64 characters of a-z, 0-9, '.', '_' and '-'");
  }
  return { issuer: devIssuer(authUrl), subject: username, email: "", emailVerified: false, name: username };
}

/** A host name or address only this machine can reach (a listener's, a request's Host). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, "");
  return bare === "localhost" || bare === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(bare);
}

/** Headers a proxy adds on the way in: a request carrying any came through one. */
const PROXY_HEADER = /^(forwarded|via|x-real-ip|x-forwarded-.*)$/;

/**
 * Why a request to the development provider did not come straight from this
 * machine (undefined: it did). With development sign-in on only by default,
 * its pages answer a request whose Host is a loopback name or address and
 * that carries no proxy's headers: a reverse proxy in front of a loopback
 * listener, the usual set-up, adds them or names its public host
 * (docs/security.md, "Development settings"). Any client can write these
 * headers, so they keep out proxies that say they are there, not a client
 * on this machine, which the provider lets in anyway.
 */
export function notFromThisMachine(headers: IncomingHttpHeaders): string | undefined {
  const proxied = Object.keys(headers).find((name) => PROXY_HEADER.test(name));
  if (proxied) return `it came through a proxy (${proxied} header)`;
  const authority = headers.host ?? headers[":authority"];
  const host = typeof authority === "string" && URL.canParse(`http://${authority}`) ? new URL(`http://${authority}`).hostname : "";
  if (!host || !isLoopbackHost(host)) return `it is addressed to ${host ? `host ${host}` : "no host"}, not this machine`;
  return undefined;
}

export interface DevPageFields {
  /** Our state of the pending login. */
  login: string;
  csrf: string;
  username: string;
  invite: string;
  /** The form's target: `{auth_prefix}/oauth/dev`. */
  action: string;
  /** The configured upstream's authorization URL, offered as the other way in. */
  upstreamUrl?: string | undefined;
  error?: string | undefined;
}

export function devSignInPage(f: DevPageFields): string {
  const error = f.error ? `<p class="error" id="error">${escapeHtml(f.error)}</p>` : "";
  const upstream = f.upstreamUrl
    ? `<p><a id="upstream" href="${escapeHtml(f.upstreamUrl)}">Sign in with the configured identity provider</a></p>`
    : "";
  return page(
    "Development sign-in",
    `<p class="muted">This server's built-in development provider: it signs you in as whatever username you type. Do not use it in production.</p>
${error}<form method="post" action="${escapeHtml(f.action)}">
<input type="hidden" name="login" value="${escapeHtml(f.login)}">
<input type="hidden" name="csrf" value="${escapeHtml(f.csrf)}">
<label for="username">Username</label>
<input id="username" name="username" required autofocus pattern="[a-z0-9._\\-]{1,64}" value="${escapeHtml(f.username)}">
<label for="invite">Invite code (optional)</label>
<input id="invite" name="invite" value="${escapeHtml(f.invite)}">
<button id="sign-in" type="submit">Sign in</button>
</form>
${upstream}`,
  );
}
