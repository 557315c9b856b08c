import { organizationOf } from "../../db/index.js";
import { quotaExceeded } from "../../errors/index.js";
import type { ListVisibility, UidpFilter } from "../../list/index.js";
import type { EventStreamLimits } from "./stream-limits.js";

/** Open streams per key. */
class Counts {
  private readonly open = new Map<string, number>();
  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
  add(key: string): void {
    this.open.set(key, this.count(key) + 1);
  }
  remove(key: string): void {
    const left = this.count(key) - 1;
    if (left > 0) this.open.set(key, left);
    else this.open.delete(key);
  }
}

/**
 * The streams open on this server, by identity, by organization read and in all; admit() refuses
 * one past any cap with RESOURCE_EXHAUSTED and a QuotaFailure naming the cap.
 */
export class StreamBudget {
  private readonly ofIdentity = new Counts();
  private readonly inOrganization = new Counts();
  private open = 0;

  constructor(private readonly limits: EventStreamLimits) {}

  /**
   * Counts a stream of `identity` that sees `visibility`, scoped by `uidp`; the function returned
   * lets it go. The organizations whose events it reads: whoever the caller is (an organization's
   * own identity, or a person signed in through its identity provider), their streams count there.
   * A stream scoped to a group of one of them counts in that one only (one scoped elsewhere still
   * counts in all); a caller who sees everything (a platform administrator) counts in none.
   */
  admit(identity: string, visibility: ListVisibility, uidp: UidpFilter | undefined): () => void {
    const { perIdentity, perOrganization, perServer } = this.limits;
    const visibleIn = visibility.all ? [] : [...new Set(visibility.roots.map(organizationOf))];
    const scope = uidp ? [uidp.inRoot, uidp.childrenOf, uidp.descendantsOf, uidp.ancestorsOf].find((g) => g) : undefined;
    const scoped = scope ? visibleIn.filter((o) => o === organizationOf(scope)) : [];
    const organizations = scoped.length ? scoped : visibleIn;
    if (this.ofIdentity.count(identity) >= perIdentity) {
      throw quotaExceeded(`identity:${identity}`, `at most ${perIdentity} WatchEvents streams per identity on one server; close one first`);
    }
    const full = organizations.find((o) => this.inOrganization.count(o) >= perOrganization);
    if (full !== undefined) {
      throw quotaExceeded(
        `organization:${full}`,
        `at most ${perOrganization} WatchEvents streams may read organization ${full}'s events on one server; close one first`,
      );
    }
    if (this.open >= perServer) {
      throw quotaExceeded(
        "server",
        `at most ${perServer} WatchEvents streams on one server, whoever holds them; try again later or another replica`,
      );
    }
    this.ofIdentity.add(identity);
    for (const o of organizations) this.inOrganization.add(o);
    this.open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.ofIdentity.remove(identity);
      for (const o of organizations) this.inOrganization.remove(o);
      this.open--;
    };
  }
}
