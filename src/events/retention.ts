import { sql } from "drizzle-orm";
import { queryRows, type Database } from "../db/index.js";
import { Periodic } from "../periodic/index.js";

export interface RetentionOptions {
  db: Database;
  clock: () => Date;
  /** PLATFORM_EVENT_RETENTION: events older than this are deleted. */
  retentionMs: number;
  /** How often to prune (default hourly; the first run is at start). */
  everyMs?: number;
  onError: (e: unknown) => void;
}

/** Rows deleted per statement, so that pruning never holds a long transaction. */
const BATCH = 5_000;

/**
 * Deletes events older than the retention, with their finished deliveries, in
 * the background of every replica (idempotent, so replicas need no
 * coordination). An event still pending delivery is kept until it is
 * delivered or given up on.
 */
export class EventRetention {
  private readonly periodic: Periodic;

  constructor(private readonly opts: RetentionOptions) {
    this.periodic = new Periodic(() => this.prune(), opts.everyMs ?? 3_600_000, opts.onError);
  }

  start(): void {
    this.periodic.start();
  }

  /** No more runs; a run under way stops after its current batch, and is waited for. */
  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** Prunes everything due; returns how many events it deleted. */
  async prune(): Promise<number> {
    const cutoff = new Date(this.opts.clock().getTime() - this.opts.retentionMs).toISOString();
    let total = 0;
    for (;;) {
      const rows = await queryRows<{ n: number | string }>(
        this.opts.db,
        sql`
        WITH old AS (
          SELECT e.uid FROM events e
          WHERE e.time < ${cutoff}
            AND NOT EXISTS (SELECT 1 FROM event_deliveries d WHERE d.event_uid = e.uid AND d.state = 'pending')
          LIMIT ${BATCH}
        ), gone_deliveries AS (
          DELETE FROM event_deliveries WHERE event_uid IN (SELECT uid FROM old)
        ), gone AS (
          DELETE FROM events WHERE uid IN (SELECT uid FROM old) RETURNING 1
        )
        SELECT count(*) AS n FROM gone`,
      );
      const n = Number(rows[0]?.n ?? 0);
      total += n;
      if (n < BATCH || this.periodic.stopped) return total;
    }
  }
}
