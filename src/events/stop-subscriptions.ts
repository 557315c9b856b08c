import { sql, type SQL } from "drizzle-orm";
import { queryRows, type Executor } from "../db/index.js";

/** What a stopped subscription's last error says: its creator was deleted. */
export const CREATOR_DELETED =
  "stopped: the identity it sends for (its creator) was deleted; an update by someone who may list its events starts it again";

/** What a stopped subscription's last error says: its creator lost events.list in its group. */
export function creatorMayNotList(creator: string, group: string): string {
  return `stopped: the identity it sends for (${creator}) may no longer list events in ${group}; an update by someone who may starts it again`;
}

/**
 * Stops the active subscriptions `which` selects (a condition on `subscriptions`), with `reason` as
 * their last error, and marks their pending deliveries failed with it: a receiver gets nothing
 * more, the claims of other replicas included (their settle finds the delivery no longer pending).
 * One statement, subscriptions locked before their deliveries (as a subscription's delete takes
 * them). Returns the uids stopped.
 */
export async function stopSubscriptions(db: Executor, which: SQL, reason: string, now: Date): Promise<string[]> {
  const stopped = await queryRows<{ uid: string }>(
    db,
    sql`
    WITH stopped AS (
      UPDATE subscriptions SET state = 'stopped', last_error = ${reason}, last_error_time = ${now.toISOString()}
      WHERE state = 'active' AND ${which}
      RETURNING uid
    ), dropped AS (
      UPDATE event_deliveries SET state = 'failed', lease_until = NULL, last_error = ${reason}
      WHERE state = 'pending' AND subscription_uid IN (SELECT uid FROM stopped)
    )
    SELECT uid FROM stopped`,
  );
  return stopped.map((s) => s.uid);
}
