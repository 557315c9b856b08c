import { grantRootRole } from "../../authz/grant-role.js";
import { parentOf, type Database } from "../../db/index.js";
import type { EventRecorder } from "../../events/index.js";
import type { MintedToken, TokenService } from "../tokens.js";
import { redeemInvite } from "./invite-redemption.js";
import { bindDefaultRole, findOrCreatePersonIdentity } from "./person-identity.js";
import type { PlatformAdmins } from "./platform-admins.js";
import type { SignInVia } from "./sign-in-via.js";
import type { SignedInPerson } from "./upstream.js";

export interface SignInDeps {
  db: Database;
  tokens: TokenService;
  /** The API base URL: the audience of the token handed to the CLI. */
  audience: string;
  clock: () => Date;
  /** PLATFORM_ADMINS: people made `owner` at the root at sign-in. */
  admins: PlatformAdmins;
  /** Records the sign-in in the audit log, in its transaction. */
  events: EventRecorder;
}

/** The event type of a sign-in (docs/design.md, "Events"). */
export const SIGNED_IN_EVENT = "platform.auth.signed_in.v1";

/**
 * The end of every login, whichever provider signed the person in: their
 * identity (found or created), `owner` at the root for a platform
 * administrator (at every sign-in, so a deleted binding comes back), the
 * organization's default role, the invite, all in one transaction, then a
 * one-hour API token. A refused invite
 * throws a LoginError and changes nothing.
 */
export async function signIn(
  deps: SignInDeps,
  person: SignedInPerson,
  opts: { invite: string; via: SignInVia },
): Promise<MintedToken> {
  const now = deps.clock();
  const idp = opts.via.kind === "organization" ? opts.via.idp : undefined;
  const identityUid = await deps.db.transaction(async (tx) => {
    const uid = await findOrCreatePersonIdentity(tx, person, now);
    if (deps.admins.includes(person, opts.via)) await grantRootRole(tx, uid, "owner", now);
    if (idp?.defaultRoleUid) await bindDefaultRole(tx, idp.groupUid, uid, idp.defaultRoleUid, now);
    const invited = opts.invite ? await redeemInvite(tx, opts.invite, person, opts.via, uid, now) : undefined;
    // The organization signed in to, or invited to; a person's own identity is root-level (global).
    const group = idp?.groupUid ?? (invited ? parentOf(invited) : "");
    await deps.events.record(tx, {
      type: SIGNED_IN_EVENT,
      subject: uid,
      actor: uid,
      group: group || null,
      data: { outcome: "accepted", via: opts.via.kind, ...(invited ? { invite: invited } : {}) },
    });
    return uid;
  });
  deps.events.announce();
  return deps.tokens.mint(identityUid, deps.audience);
}
