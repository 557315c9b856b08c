import { asc, gt, inArray, or, sql } from "drizzle-orm";
import { queryRows, schema, type Executor } from "../db/index.js";
import { resourceExhausted } from "../errors/index.js";
import { failurePauseMs } from "./failure-pause.js";

const { events } = schema;
/** An event as the hub reads it: the whole row, read once per batch for every watcher of the replica. */
export type HubEvent = typeof events.$inferSelect;

/**
 * The NOTIFY channel that says "events were recorded". It carries no payload and is sent after
 * the recording transaction commits, never inside it (docs/design.md, "Events", says why).
 */
export const EVENTS_CHANNEL = "platform_events";

/** The channel that says "webhook deliveries were written": only dispatchers listen, only such writes send it. */
export const DELIVERIES_CHANNEL = "platform_event_deliveries";

/**
 * What a watcher is handed per batch (or per run of batches it was slow to take): the seqs of
 * every event that became visible, and of those events the ones its filter accepts.
 */
export interface LiveBatch {
  seqs: number[];
  rows: HubEvent[];
}

/** Recorded events as an async iterable of batches, in the order they became visible. */
export interface LiveEvents extends AsyncIterable<LiveBatch> {
  close(): void;
}

/** Most seqs a slow watcher may have waiting; beyond that it is ended rather than let grow. */
const MAX_BUFFERED = 100_000;
/**
 * Most bytes of rows a slow watcher may have waiting in batches it has not taken, by default (its
 * newest batch aside): a cap on the events' text, not their count, as one event's data may be
 * large (docs/security.md, "Event streams").
 */
export const MAX_BUFFERED_BYTES = 2 * 1024 * 1024;
/** What a row costs beyond its text (its object, its fields, its place in a batch), counted in its size. */
const ROW_OVERHEAD = 256;
/** Events read per look: whole rows, held until every watcher has taken them. */
const PAGE = 1_000;
/** A seq skipped over is looked for this long: its transaction may still commit (or it rolled back). */
const GAP_LIFETIME_MS = 30_000;
const MAX_GAPS = 10_000;

export interface EventHubOptions {
  db: Executor;
  /** How often to look without a wake-up (another replica may have died between its commit and its announcement). */
  pollMs?: number;
  /** Most bytes of rows one watcher may have waiting (MAX_BUFFERED_BYTES by default); beyond that it is ended. */
  maxBufferedBytes?: number;
  onError: (e: unknown) => void;
}

/**
 * Fans newly committed events out to this replica's watchers. One look per
 * wake-up, for all of them: the events after the last seq seen, plus those of
 * the seqs skipped over recently. A seq is taken when its row is inserted but
 * becomes visible at commit, so a lower one can appear after a higher one; the
 * gaps are how it is not missed. The look reads whole rows, and each watcher's
 * filter picks its own in memory: a batch costs one query however many watch
 * (docs/design.md, "Watching").
 */
export class EventHub {
  private readonly watchers = new Set<Watcher>();
  private closed = false;
  private cursor = 0;
  private readonly gaps = new Map<number, number>();
  private looking: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  /** Failed looks in a row, and until when wake-ups are ignored because of them. */
  private failures = 0;
  private pausedUntil = 0;
  /** Counts resume() calls: a look that fails after one began has no pause to take. */
  private resumes = 0;

  constructor(private readonly opts: EventHubOptions) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.opts.pollMs ?? 1000);
    this.timer.unref();
  }

  /** Events may have been recorded (a NOTIFY, or this replica's own write): look once, for every watcher. */
  wake(): void {
    // Idle (no watcher): nothing to look for; the first watcher starts the cursor afresh.
    if (this.closed || this.watchers.size === 0) return;
    // The database is away: looking every second would only push the driver's reconnect backoff
    // up, and with it every API call's wait (as the dispatcher's pause, docs/design.md "Webhooks").
    if (Date.now() < this.pausedUntil) return;
    if (this.looking) {
      this.again = true;
      return;
    }
    const resumes = this.resumes;
    this.looking = this.look()
      .then(
        () => {
          this.failures = 0;
          this.pausedUntil = 0;
        },
        (e: unknown) => {
          this.opts.onError(e);
          // The database came back while this look was under way: look again rather than pause.
          if (this.resumes !== resumes) return;
          this.failures++;
          this.pausedUntil = Date.now() + failurePauseMs(this.opts.pollMs ?? 1000, this.failures);
          this.again = false;
        },
      )
      .finally(() => {
        this.looking = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async look(): Promise<void> {
    const now = Date.now();
    for (const [seq, since] of this.gaps) if (now - since > GAP_LIFETIME_MS) this.gaps.delete(seq);
    const gaps = [...this.gaps.keys()];
    // At most MAX_GAPS bind parameters: far below PostgreSQL's limit.
    const after = gt(events.seq, this.cursor);
    // Each row's size, measured once here for every watcher: its text's bytes, as the database counts them.
    const found = await this.opts.db
      .select({ row: events, size: rowSize })
      .from(events)
      .where(gaps.length ? or(after, inArray(events.seq, gaps)) : after)
      .orderBy(asc(events.seq))
      .limit(PAGE);
    const rows = found.map((f) => f.row);
    const sizes = found.map((f) => Number(f.size) + ROW_OVERHEAD);
    const seqs = rows.map((r) => r.seq);
    for (const seq of seqs) {
      if (this.gaps.delete(seq)) continue;
      for (let missing = this.cursor + 1; missing < seq && this.gaps.size < MAX_GAPS; missing++) this.gaps.set(missing, now);
      this.cursor = seq;
    }
    if (seqs.length) for (const w of this.watchers) w.push(seqs, rows, sizes);
    if (found.length === PAGE) this.again = true;
  }

  /** The database is back (its LISTEN is established again): look now, whatever pause failures set. */
  resume(): void {
    this.resumes++;
    this.pausedUntil = 0;
    this.wake();
  }

  /**
   * The events committed from now on (and perhaps a few from just before,
   * which the caller tells apart by seq), until `signal` aborts, close() is
   * called, or the hub closes. `accepts` picks the rows the watcher is handed
   * and keeps until it takes them (its filters, and what its caller could see
   * at its last check: it may change its answer as that does); it must be cheap
   * and synchronous, as it runs for every watcher on every event, when the
   * batch arrives. The seqs of every batch are handed over anyway. A watcher
   * more than 100,000 events or `maxBufferedBytes` of rows behind is ended
   * with RESOURCE_EXHAUSTED: it resumes after the last event it took.
   */
  async subscribe(signal: AbortSignal, accepts: (row: HubEvent) => boolean = () => true): Promise<LiveEvents> {
    // An idle hub's cursor is stale: start it at the events recorded so far.
    if (this.watchers.size === 0) {
      const [row] = await queryRows<{ seq: string | number | null }>(this.opts.db, sql`select max(seq) as seq from events`);
      if (this.watchers.size === 0) {
        this.cursor = Number(row?.seq ?? 0);
        this.gaps.clear();
      }
    }
    const w = new Watcher(accepts, this.opts.maxBufferedBytes ?? MAX_BUFFERED_BYTES, () => this.watchers.delete(w));
    if (this.closed || signal.aborted) w.end();
    else {
      this.watchers.add(w);
      signal.addEventListener("abort", () => w.end(), { once: true });
    }
    return w;
  }

  /** How many watchers are listening (metrics, tests). */
  get size(): number {
    return this.watchers.size;
  }

  /** The rows this replica's watchers have waiting, and their bytes as counted against each watcher's cap (metrics, tests). */
  get buffered(): { rows: number; bytes: number } {
    let rows = 0;
    let bytes = 0;
    for (const w of this.watchers) {
      rows += w.rowsBuffered;
      bytes += w.bytesBuffered;
    }
    return { rows, bytes };
  }

  /** Ends every stream, then waits for a lookup under way: the server is shutting down. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const w of [...this.watchers]) w.end();
    await this.looking;
  }
}

/** A row's size in bytes: its data's JSON text and its text fields, as the database counts them. */
const rowSize = sql<number>`octet_length(${events.data}::text) + octet_length(${events.uid}) + octet_length(${events.type})
  + octet_length(${events.source}) + octet_length(${events.subject}) + octet_length(${events.actor})
  + coalesce(octet_length(${events.parentUid}), 0)`;

class Watcher implements LiveEvents {
  /** The batches not yet taken: the seqs array is the hub's own, shared by every watcher. */
  private buffered: LiveBatch[] = [];
  private seqsBuffered = 0;
  rowsBuffered = 0;
  bytesBuffered = 0;
  private ended = false;
  /** Why the watcher was cut off for falling behind, which the stream then reports. */
  private overflowed: string | undefined;
  private wake: (() => void) | undefined;

  constructor(
    private readonly accepts: (row: HubEvent) => boolean,
    private readonly maxBytes: number,
    private readonly onEnd: () => void,
  ) {}

  push(seqs: number[], rows: HubEvent[], sizes: number[]): void {
    if (this.ended) return;
    const kept: HubEvent[] = [];
    for (let i = 0; i < rows.length; i++) {
      if (!this.accepts(rows[i]!)) continue;
      kept.push(rows[i]!);
      this.bytesBuffered += sizes[i]!;
    }
    this.buffered.push({ seqs, rows: kept });
    this.seqsBuffered += seqs.length;
    this.rowsBuffered += kept.length;
    // A watcher that does not read is cut off, not allowed to hold the replica's memory. Its bytes
    // count once it has left a batch untaken: the newest one (PAGE rows at most, which the hub read
    // anyway) may be over the cap alone and be taken at once.
    if (this.seqsBuffered > MAX_BUFFERED) this.overflow(`${MAX_BUFFERED} events`);
    else if (this.buffered.length > 1 && this.bytesBuffered > this.maxBytes) this.overflow(`${this.maxBytes} bytes of events`);
    this.wake?.();
  }

  /** Ends the watcher and lets go of its rows at once: its stream reports it when it next reads. */
  private overflow(what: string): void {
    this.overflowed = `the watch fell more than ${what} behind; resume with after_id set to the last event id received`;
    this.buffered = [];
    this.seqsBuffered = this.rowsBuffered = this.bytesBuffered = 0;
    this.end();
  }

  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.onEnd();
    this.wake?.();
  }

  close(): void {
    this.end();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<LiveBatch> {
    for (;;) {
      if (this.overflowed) throw resourceExhausted(this.overflowed);
      if (this.ended) return;
      if (!this.buffered.length) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const batches = this.buffered;
      this.buffered = [];
      this.seqsBuffered = this.rowsBuffered = this.bytesBuffered = 0;
      yield batches.length === 1 ? batches[0]! : { seqs: batches.flatMap((b) => b.seqs), rows: batches.flatMap((b) => b.rows) };
    }
  }
}
