import { sql } from "drizzle-orm";
import { Periodic } from "../periodic/index.js";
import { queryRows, type Database } from "./client.js";

// PGlite runs PostgreSQL as a single-user backend, which starts no autovacuum worker and whose
// table statistics counters stay at zero (docs/design.md, "Storage"). Without this, an embedded
// store never has planner statistics (a List of 10,000 children sorted every one of them: 9 ms,
// not 3) and never takes back the space of deleted or updated rows (pruned events, settled
// deliveries), so its tables and indexes only grow.

/** How far a table's size may drift from what its last ANALYZE saw before it is analyzed again. */
const DRIFT = 0.2;
/** Below this drift in pages a table is not analyzed again (a small table's plans do not depend on it). */
const MIN_DRIFT_PAGES = 8;
/** How often every table is vacuumed: a table with nothing to take back costs about a millisecond. */
const EVERY_MS = 60_000;

export interface PgliteUpkeepOptions {
  db: Database;
  everyMs?: number;
  onError: (e: unknown) => void;
  /** Called after each table's VACUUM, with whether it was analyzed too and how long it held the store. */
  onVacuumed?: (table: string, analyzed: boolean, ms: number) => void;
}

interface TableSize {
  name: string;
  /** Its size now, in pages. */
  pages: number;
  /** Its size at its last VACUUM or ANALYZE, in pages. */
  relpages: number;
  /** Whether the planner has statistics of its columns (not the case before its first ANALYZE). */
  analyzed: boolean;
}

/**
 * What autovacuum does for a PostgreSQL server, for an embedded store: every minute each table
 * that holds anything is vacuumed, so the space of its deleted and replaced rows is used again,
 * and analyzed too when its size has drifted by a fifth since its last ANALYZE (or it never had
 * one). One table at a time, so other queries go on between them.
 */
export class PgliteUpkeep {
  private readonly periodic: Periodic;
  /** Each table's size at its last ANALYZE here; until one, its relpages when first seen (its size at its last VACUUM or ANALYZE). */
  private readonly analyzedAt = new Map<string, number>();

  constructor(private readonly opts: PgliteUpkeepOptions) {
    this.periodic = new Periodic(() => this.run(), opts.everyMs ?? EVERY_MS, opts.onError);
  }

  /** A round now, then one every `everyMs`. */
  start(): void {
    this.periodic.start();
  }

  /** No more rounds; one under way stops after its current table, and is waited for. */
  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** The tables to analyze now, by name. */
  async due(): Promise<string[]> {
    return (await this.sizes()).filter((t) => this.needsAnalyze(t)).map((t) => t.name);
  }

  /** Vacuums every table that holds anything, analyzing those due; returns the analyzed ones' names. */
  async run(): Promise<string[]> {
    const analyzed: string[] = [];
    for (const table of await this.sizes()) {
      if (this.periodic.stopped) break;
      const analyze = this.needsAnalyze(table);
      const t0 = performance.now();
      const name = sql.identifier(table.name);
      await this.opts.db.execute(analyze ? sql`VACUUM (ANALYZE) ${name}` : sql`VACUUM ${name}`);
      this.opts.onVacuumed?.(table.name, analyze, performance.now() - t0);
      if (analyze) {
        this.analyzedAt.set(table.name, table.pages);
        analyzed.push(table.name);
      }
    }
    return analyzed;
  }

  private needsAnalyze(t: TableSize): boolean {
    // Not pg_class.reltuples < 0: on PGlite a plain VACUUM soon after an ANALYZE can set it back to -1.
    if (!t.analyzed) return true;
    let at = this.analyzedAt.get(t.name);
    if (at === undefined) {
      // Taken once: every VACUUM moves relpages, and the drift is since the last ANALYZE.
      at = t.relpages;
      this.analyzedAt.set(t.name, at);
    }
    return Math.abs(t.pages - at) > Math.max(MIN_DRIFT_PAGES, at * DRIFT);
  }

  /** The tables of the schema that hold anything. */
  private async sizes(): Promise<TableSize[]> {
    const rows = await queryRows<Record<keyof TableSize, string | number | boolean>>(
      this.opts.db,
      sql`
      SELECT c.relname AS name, c.relpages,
             pg_relation_size(c.oid) / current_setting('block_size')::int AS pages,
             EXISTS (SELECT 1 FROM pg_statistic s WHERE s.starelid = c.oid) AS analyzed
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind = 'r' AND pg_relation_size(c.oid) > 0
      ORDER BY c.relname`,
    );
    return rows.map((r) => ({ name: String(r.name), pages: Number(r.pages), relpages: Number(r.relpages), analyzed: r.analyzed === true }));
  }
}
