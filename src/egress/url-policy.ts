import { isIP } from "node:net";
import { addressAllowed, addressRange } from "./address-policy.js";
import { EgressError } from "./egress-error.js";

/** A URL the guard accepted, with its host as resolution and connection see it. */
export interface CheckedUrl {
  url: URL;
  /** The host name, or the address of an IP literal (without IPv6 brackets). */
  host: string;
  /** Set when the host is an IP literal: already checked, nothing to resolve. */
  literal: boolean;
}

/**
 * The URL rule of every outbound request: https only (http too with the
 * development flag), no credentials, and an IP-literal host must be an
 * allowed address. WHATWG URL parsing has already turned decimal, octal and
 * hex IPv4 forms into dotted quads, so they are judged like any literal.
 */
export function checkUrl(raw: string | URL, opts: { allowInsecure: boolean }): CheckedUrl {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (e) {
    throw new EgressError("url", `not an absolute URL: ${String(raw).slice(0, 200)}`, { cause: e });
  }
  const secure = url.protocol === "https:" || (opts.allowInsecure && url.protocol === "http:");
  if (!secure) throw new EgressError("url", `${url.origin}: only https${opts.allowInsecure ? " or http" : ""} may be fetched`);
  if (url.username || url.password) throw new EgressError("url", `${url.origin}: credentials in the URL`);
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const literal = isIP(host) !== 0;
  if (literal && !addressAllowed(host, { allowLoopback: opts.allowInsecure })) {
    throw new EgressError("url", `${url.origin}: ${host} is not a public address (${addressRange(host)})`);
  }
  return { url, host, literal };
}
