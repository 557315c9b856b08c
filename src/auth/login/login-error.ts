/**
 * The typed errors a login ends with. They reach the CLI as
 * `?error=<code>&error_description=<text>` on its loopback callback, and the
 * person as a short page; never a stack trace.
 */
export type LoginErrorCode =
  /** A parameter of the login request is malformed. */
  | "invalid_request"
  /** The organization named by `org` has no identity provider. */
  | "no_identity_provider"
  /** No sign-in method is configured for this request. */
  | "login_unavailable"
  /** The person cancelled or the upstream refused the sign-in. */
  | "access_denied"
  /** The upstream provider failed or answered with something that did not verify. */
  | "upstream_error"
  /** The pending login is older than its 10 minutes. */
  | "login_expired"
  /** No invite has this code. */
  | "invalid_invite"
  | "invite_expired"
  /** A single-use invite that was already redeemed. */
  | "invite_used"
  /**
   * The invite is for an email address the sign-in did not vouch for: another
   * address, an unverified one, or one from a provider the invite's
   * group does not trust (one below it or in another group or organization,
   * the development one).
   */
  | "invite_email_mismatch"
  | "server_error";

export class LoginError extends Error {
  /**
   * `description` is shown to the person and the CLI: never put an
   * underlying error's message in it (it may name internal hosts and
   * ports); pass that error as `cause`, which only the log sees.
   */
  constructor(
    readonly code: LoginErrorCode,
    readonly description: string,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${description}`, options);
  }
}
