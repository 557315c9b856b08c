import { sql } from "drizzle-orm";
import type { Grants } from "../authz/grants.js";
import { queryRows, type Database } from "../db/index.js";
import { CREATOR_DELETED, creatorMayNotList, stopSubscriptions } from "./stop-subscriptions.js";

/** An identity's grants, as the grants cache has them (cleared whenever grants change). */
export type GrantsOf = (identityUid: string) => Promise<Grants>;

/**
 * Why a subscription of `group` sending for `creator` must stop, or undefined while the creator
 * may still read what it sends: `events.list` in its group. A subscription without a creator (made
 * before creators were recorded) is not stopped (docs/design.md, "Webhooks").
 */
export async function creatorRefusal(grantsOf: GrantsOf, creator: string | null, group: string): Promise<string | undefined> {
  if (!creator) return undefined;
  const grants = await grantsOf(creator);
  if (!grants.identity.exists) return CREATOR_DELETED;
  if (!grants.holdsAt("events.list", group)) return creatorMayNotList(creator, group);
  return undefined;
}

export interface CreatorCheckOptions {
  db: Database;
  grantsOf: GrantsOf;
  clock: () => Date;
  /** The least time from one sweep's start to the next's: a burst of grant changes costs one sweep a gap. */
  minGapMs?: number;
  onError: (e: unknown) => void;
}

/** Active subscriptions read per query of a sweep. */
const PAGE = 500;

/**
 * Stops the subscriptions whose creators lost `events.list` in their group, whenever grants change
 * (the grants NOTIFY every replica hears, and start-up). The dispatcher checks each delivery's
 * creator too, just before sending it: a sweep makes the stop visible, and fails the queue, without
 * waiting for the next event.
 */
export class CreatorCheck {
  private readonly minGapMs: number;
  private wanted = false;
  private closed = false;
  private running: Promise<void> | undefined;
  private endGap: (() => void) | undefined;

  constructor(private readonly opts: CreatorCheckOptions) {
    this.minGapMs = opts.minGapMs ?? 1000;
  }

  /** Grants changed (or may have, unheard): sweep soon. */
  changed(): void {
    if (this.closed) return;
    this.wanted = true;
    this.running ??= this.loop().finally(() => (this.running = undefined));
  }

  /** Ends the sweeps; waits for the one under way. */
  async close(): Promise<void> {
    this.closed = true;
    this.endGap?.();
    await this.running;
  }

  private async loop(): Promise<void> {
    while (this.wanted && !this.closed) {
      this.wanted = false;
      const started = Date.now();
      try {
        await this.sweep();
      } catch (e) {
        this.opts.onError(e);
      }
      const gap = this.minGapMs - (Date.now() - started);
      if (this.wanted && gap > 0 && !this.closed) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, gap);
          this.endGap = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.endGap = undefined;
      }
    }
  }

  /** Checks every active subscription that has a creator; returns the uids it stopped. */
  async sweep(): Promise<string[]> {
    const stopped: string[] = [];
    let after = "";
    for (;;) {
      const page = await queryRows<{ uid: string; parent_uid: string; creator_uid: string }>(
        this.opts.db,
        sql`
        SELECT uid, parent_uid, creator_uid FROM subscriptions
        WHERE state = 'active' AND creator_uid IS NOT NULL AND uid > ${after}
        ORDER BY uid LIMIT ${PAGE}`,
      );
      for (const s of page) {
        const reason = await creatorRefusal(this.opts.grantsOf, s.creator_uid, s.parent_uid);
        // Only while it still sends for the creator checked: an update meanwhile made someone else vouch for it.
        if (reason)
          stopped.push(
            ...(await stopSubscriptions(this.opts.db, sql`uid = ${s.uid} AND creator_uid = ${s.creator_uid}`, reason, this.opts.clock())),
          );
      }
      if (page.length < PAGE || this.closed) return stopped;
      after = page[page.length - 1]!.uid;
    }
  }
}
