import type { Executor } from "../../db/index.js";
import { findInviteByCode, findRedeemableInvite, markInviteRedeemed } from "../../db/index.js";
import { LoginError } from "./login-error.js";
import type { EventRecorder } from "../../events/index.js";
import { grantRole } from "../../bindings/index.js";
import { inviteEmailSatisfied } from "./invite-email.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

/** Invite codes are 43 base64url characters; anything far from that is not worth a query. */
const CODE = /^[A-Za-z0-9_-]{16,128}$/;

export function checkInviteFormat(code: string): void {
  if (code && !CODE.test(code)) throw new LoginError("invalid_invite", "the invite code is malformed");
}

/** Why `code` cannot be redeemed at `now`. */
async function refusal(tx: Executor, code: string, now: Date): Promise<LoginError> {
  const invite = await findInviteByCode(tx, code);
  if (!invite) return new LoginError("invalid_invite", "no invite has this code (it may have been deleted)");
  if (invite.expirationTime.getTime() <= now.getTime()) {
    return new LoginError("invite_expired", `the invite expired at ${invite.expirationTime.toISOString()}`);
  }
  return new LoginError("invite_used", "the invite was for a single use and has been redeemed already");
}

/**
 * Redeems invite `code` for the person who just signed in `via` a provider:
 * checks its email restriction (inviteEmailSatisfied), records the
 * redemption (single use is decided atomically) and binds the invite's role
 * at its group (recorded with the person as its actor). Runs in the login's
 * transaction, so a refused invite undoes the whole login. Returns the
 * invite's uid, and whether a binding was made (the person may hold the role there already).
 */
export async function redeemInvite(
  tx: Executor,
  events: EventRecorder,
  code: string,
  person: SignedInPerson,
  via: SignInVia,
  identityUid: string,
  now: Date,
): Promise<{ invite: string; bound: boolean }> {
  checkInviteFormat(code);
  const invite = await findRedeemableInvite(tx, code, now);
  if (!invite) throw await refusal(tx, code, now);
  if (!inviteEmailSatisfied(invite, person, via)) {
    throw new LoginError(
      "invite_email_mismatch",
      "the invite is for a specific email address: sign in with it through this server's identity provider, or one configured at the invite's group or a group above it, which must report it verified",
    );
  }
  if (!(await markInviteRedeemed(tx, invite.uid, now))) throw await refusal(tx, code, now);
  const bound = await grantRole(tx, events, invite.parentUid, { identityUid, roleUid: invite.roleUid, now, actor: identityUid });
  return { invite: invite.uid, bound };
}
