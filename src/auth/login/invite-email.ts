import { organizationOf } from "../../db/index.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

/**
 * Whether the person who signed in `via` a provider may redeem an invite
 * restricted to `invite.email`. Their email must be that address and
 * verified, and vouched for by a provider the invite's organization trusts:
 * the deployment's upstream, or an IdentityProvider of the same
 * organization. Any organization can configure an IdentityProvider that
 * asserts any verified email, so another organization's word does not
 * count; nor does the development provider's.
 */
export function inviteEmailSatisfied(invite: { email: string; parentUid: string }, person: SignedInPerson, via: SignInVia): boolean {
  if (!invite.email) return true;
  if (!person.emailVerified || person.email.toLowerCase() !== invite.email.toLowerCase()) return false;
  switch (via.kind) {
    case "global":
      return true;
    case "organization":
      return organizationOf(via.idp.groupUid) === organizationOf(invite.parentUid);
    case "development":
      return false;
  }
}
