import { withoutTrailingSlash } from "../http/url.js";
import { fetchOrFail } from "./api-client.js";

const DISCOVERY_TIMEOUT_MS = 10_000;

/**
 * The auth URL (where /oauth and /sts/exchange live): the `issuer` of the
 * API's /.well-known/openid-configuration, or the API URL itself when the
 * document is missing or has none.
 */
export async function discoverAuthUrl(api: string): Promise<string> {
  const res = await fetchOrFail(`${api}/.well-known/openid-configuration`, {}, DISCOVERY_TIMEOUT_MS);
  if (!res.ok) return api;
  try {
    const issuer = ((await res.json()) as { issuer?: unknown }).issuer;
    if (typeof issuer === "string" && /^https?:\/\//.test(issuer)) return withoutTrailingSlash(issuer);
  } catch {
    // not JSON: fall back to the API URL
  }
  return api;
}
