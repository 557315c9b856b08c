import type { MintedToken } from "../tokens.js";
import type { LoginError } from "./login-error.js";

const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

/**
 * The CLI's callback URL when it is exactly `http://<loopback>:<port>/callback`;
 * undefined otherwise. Tokens only ever go to such a URL, so no other host can
 * receive one through a crafted login link.
 */
export function loopbackCallback(raw: string | null): string | undefined {
  if (!raw || raw.length > 200) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const plain = url.protocol === "http:" && !url.username && !url.password && !url.search && !url.hash;
  if (!plain || !LOOPBACK_HOSTS.has(url.hostname) || !url.port || url.pathname !== "/callback") return undefined;
  return url.href;
}

/** Where the browser goes when the login succeeded. */
export function callbackWithToken(callback: string, cliState: string, minted: MintedToken): string {
  const url = new URL(callback);
  url.search = new URLSearchParams({ state: cliState, token: minted.token, expiry: minted.expiry.toISOString() }).toString();
  return url.href;
}

/** Where the browser goes when the login failed. */
export function callbackWithError(callback: string, cliState: string, error: LoginError): string {
  const url = new URL(callback);
  url.search = new URLSearchParams({ state: cliState, error: error.code, error_description: error.description }).toString();
  return url.href;
}
