import { groupAndAncestors } from "../../db/index.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

/**
 * Whether the person who signed in `via` a provider may redeem an invite
 * restricted to `invite.email`. Their email must be that address and
 * verified, and vouched for by a provider the invite's group trusts: the
 * deployment's upstream, or an IdentityProvider of the invite's group or a
 * group above it (docs/security.md, "Invites"). Whoever owns a group can
 * configure an IdentityProvider there that asserts any verified email, so
 * the word of a provider in a subgroup, a sibling or another organization
 * does not count; nor does the development provider's.
 */
export function inviteEmailSatisfied(invite: { email: string; parentUid: string }, person: SignedInPerson, via: SignInVia): boolean {
  if (!invite.email) return true;
  if (!person.emailVerified || person.email.toLowerCase() !== invite.email.toLowerCase()) return false;
  switch (via.kind) {
    case "global":
      return true;
    case "organization":
      return groupAndAncestors(invite.parentUid).includes(via.idp.groupUid);
    case "development":
      return false;
  }
}
