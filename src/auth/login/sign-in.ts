import { parentOf, type Database } from "../../db/index.js";
import type { EventRecorder } from "../../events/index.js";
import { grantRole, ROOT } from "../../bindings/index.js";
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
  /** Records the sign-in, and the bindings it made, in the audit log, in its transaction. */
  events: EventRecorder;
  /**
   * Told once a sign-in that made bindings has committed: this replica's grants cache is cleared
   * then, as after an API write that grants, so the new token's first request sees them (the
   * database's NOTIFY may reach this replica later).
   */
  grantsChanged: () => void;
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
export async function signIn(deps: SignInDeps, person: SignedInPerson, opts: { invite: string; via: SignInVia }): Promise<MintedToken> {
  const now = deps.clock();
  const idp = opts.via.kind === "organization" ? opts.via.idp : undefined;
  const { identityUid, bound } = await deps.db.transaction(async (tx) => {
    const uid = await findOrCreatePersonIdentity(tx, person, now);
    let bound = false;
    // PLATFORM_ADMINS is the server's configuration, not the person's doing: the server is the actor.
    if (deps.admins.includes(person, opts.via))
      bound = await grantRole(tx, deps.events, ROOT, { identityUid: uid, roleUid: "owner", now, actor: "" });
    if (idp?.defaultRoleUid) bound = (await bindDefaultRole(tx, deps.events, idp.groupUid, uid, idp.defaultRoleUid, now)) || bound;
    const invited = opts.invite ? await redeemInvite(tx, deps.events, opts.invite, person, opts.via, uid, now) : undefined;
    bound ||= invited?.bound ?? false;
    // The organization signed in to, or invited to; a person's own identity is root-level (global).
    const group = idp?.groupUid ?? (invited ? parentOf(invited.invite) : "");
    await deps.events.record(tx, {
      type: SIGNED_IN_EVENT,
      subject: uid,
      actor: uid,
      group: group || null,
      data: { outcome: "accepted", via: opts.via.kind, ...(invited ? { invite: invited.invite } : {}) },
    });
    return { identityUid: uid, bound };
  });
  if (bound) deps.grantsChanged();
  deps.events.announce();
  return deps.tokens.mint(identityUid, deps.audience);
}
