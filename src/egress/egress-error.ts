/** Why the guard refused or failed an outbound request. */
export type EgressFailure =
  /** The URL itself: scheme, credentials, or an address literal that is not allowed. */
  | "url"
  /** The host name resolved to (or is) an address that is not allowed, or did not resolve. */
  | "address"
  /** Too many outbound requests are in flight. */
  | "busy"
  | "timeout"
  | "too_large"
  /** The answer was a redirect; redirects are never followed. */
  | "redirect"
  /** fetchJson: the answer was not 200 or not JSON. */
  | "answer"
  /** The connection or the exchange failed (refused, reset, TLS). */
  | "network";

/**
 * The one error of the egress guard. Its message and cause are for the log
 * (they may name internal addresses and ports); what a caller shows to
 * people or API clients must stay generic.
 */
export class EgressError extends Error {
  override readonly name = "EgressError";

  constructor(
    readonly failure: EgressFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * True when `e`, or an error it wraps (openid-client wraps what its fetch threw), is the guard's
 * "busy": a budget was spent, which says nothing about the host asked for.
 */
export function budgetSpent(e: unknown): boolean {
  for (let cur = e, depth = 0; cur instanceof Error && depth < 8; cur = cur.cause, depth++) {
    if (cur instanceof EgressError) return cur.failure === "busy";
  }
  return false;
}
