import { escapeHtml, page } from "./login-pages.js";
import type { OrganizationProvider } from "./upstream.js";

/**
 * Whether a login through an organization's identity provider goes straight
 * there, or first through the interstitial page below (docs/security.md,
 * "Signing in at an organization's provider"). Any organization's owner
 * chooses where its provider sends people, and `/oauth?org=` on this server's
 * own domain would otherwise be a ready-made link to a look-alike sign-in
 * page. Straight there only when the operator vouches for it: the provider
 * is held by the root group of an organization marked verified (not by one
 * of its subgroups, whose owners may be anyone the organization delegated
 * to), or the provider's host is one of PLATFORM_TRUSTED_IDP_HOSTS (on any
 * port: an entry names a host the operator trusts, not one service on it).
 */
export function needsInterstitial(org: OrganizationProvider, authorizationUrl: string, trustedHosts: readonly string[]): boolean {
  if (org.verified) return false;
  return !trustedHosts.includes(new URL(authorizationUrl).hostname);
}

export interface InterstitialFields {
  org: OrganizationProvider;
  /** Where Continue goes: the provider's authorization URL (the pending login's cookie is set with this page). */
  continueUrl: string;
  /** Where Cancel goes: the CLI's callback with error=access_denied. */
  cancelUrl: string;
}

/**
 * The page that names where the person is about to be sent, and waits for
 * them to choose: no script, no refresh (the pages' CSP allows neither). The
 * host is shown as the URL standard serialises it (punycode), so a
 * look-alike name cannot hide behind Unicode. Every value is escaped.
 */
export function providerInterstitialPage(f: InterstitialFields): string {
  const host = new URL(f.continueUrl).host;
  return page(
    "Leaving to sign in elsewhere",
    `<p>The sign-in link you followed is for group <strong id="group">${escapeHtml(f.org.group.name)}</strong> (<code>${escapeHtml(f.org.group.uid)}</code>), whose people sign in with its own identity provider, <strong id="provider">${escapeHtml(f.org.providerName)}</strong>, at</p>
<p><strong id="host">${escapeHtml(host)}</strong></p>
<p class="muted">This server's operator has not verified this organization or that host: whoever set it up chose where it sends you. Continue only if you expected to sign in at ${escapeHtml(host)}, and never enter a password there that belongs to another site.</p>
<p><a id="continue" href="${escapeHtml(f.continueUrl)}">Continue to ${escapeHtml(host)}</a></p>
<p><a id="cancel" href="${escapeHtml(f.cancelUrl)}">Cancel</a></p>`,
  );
}
