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
