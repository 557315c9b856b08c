import { Code, ConnectError } from "@connectrpc/connect";

/** The NOTIFY channel on which each recorded event's seq is announced (migration 0007). */
export const EVENTS_CHANNEL = "platform_events";

/** Seqs of recorded events, in commit order, as an async iterable of batches. */
export interface LiveEvents extends AsyncIterable<number[]> {
  close(): void;
}

/** Most seqs a slow watcher may have waiting; beyond that it is ended rather than let grow. */
const MAX_BUFFERED = 100_000;

/**
 * Fans the replica's one LISTEN on `platform_events` out to its watchers
 * (docs/design.md, "Events"). PostgreSQL sends every replica the seq of every
 * event committed anywhere; PGlite announces its own in process.
 */
export class EventHub {
  private readonly watchers = new Set<Watcher>();
  private closed = false;

  /** Given each notification's payload (an event's seq). */
  readonly onNotify = (payload: string): void => {
    const seq = Number(payload);
    if (!Number.isSafeInteger(seq)) return;
    for (const w of this.watchers) w.push(seq);
  };

  /** The seqs of events committed from now on, until `signal` aborts, close() is called, or the hub closes. */
  subscribe(signal: AbortSignal): LiveEvents {
    const w = new Watcher(() => this.watchers.delete(w));
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

  /** Ends every stream: the server is shutting down. */
  close(): void {
    this.closed = true;
    for (const w of [...this.watchers]) w.end();
  }
}

class Watcher implements LiveEvents {
  private buffered: number[] = [];
  private ended = false;
  private overflowed = false;
  private wake: (() => void) | undefined;

  constructor(private readonly onEnd: () => void) {}

  push(seq: number): void {
    if (this.ended) return;
    this.buffered.push(seq);
    // A watcher that does not read is cut off, not allowed to hold the replica's memory.
    if (this.buffered.length > MAX_BUFFERED) {
      this.overflowed = true;
      this.end();
    }
    this.wake?.();
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

  async *[Symbol.asyncIterator](): AsyncIterator<number[]> {
    while (!this.ended || this.buffered.length) {
      if (this.overflowed) throw new ConnectError(`the watch fell more than ${MAX_BUFFERED} events behind; resume from the last event id received`, Code.ResourceExhausted);
      if (this.ended) return;
      if (!this.buffered.length) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      const batch = this.buffered;
      this.buffered = [];
      yield batch;
    }
  }
}
