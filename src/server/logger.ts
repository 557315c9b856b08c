import { fstatSync, type Stats, writeSync } from "node:fs";
import { pino, type DestinationStream, type Logger } from "pino";
import { serializeError } from "./error-serializer.js";

/**
 * Paths pino censors wherever they appear at these depths: nothing logs
 * them today, and a future `log.info({ req })` or `{ headers }` must not
 * leak a bearer token either.
 */
const REDACT_PATHS = [
  "authorization",
  "headers.authorization",
  "*.authorization",
  "*.headers.authorization",
  "cookie",
  "headers.cookie",
  "*.headers.cookie",
  "token",
  "*.token",
  "clientSecret",
  "*.clientSecret",
];

/** The server's logger: errors through serializeError (no query parameters), credentials censored. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, serializers: { err: serializeError }, redact: { paths: REDACT_PATHS, censor: "[redacted]" } };
  return destination ? pino(options, destination) : pino(options);
}

/** Bytes kept while the destination is full (EAGAIN); the newest lines past them are dropped. */
const MAX_PENDING_BYTES = 1024 * 1024;

/**
 * Where the server's log lines go (a file descriptor, stdout in production): lines are
 * batched and written with write(2), and a destination that fails never stops the server
 * (docs/security.md, "Shutdown and logging"). A closed pipe (EPIPE), a bad descriptor (EBADF) or
 * any other error drops what is queued; a full non-blocking pipe (EAGAIN) keeps the oldest 1 MiB
 * (whole lines) for the next flush and drops the newest lines beyond it. Every line dropped is
 * counted (`dropped`, shown in /metrics). Nothing here waits or retries: a flush writes until the
 * descriptor takes no more, so on a non-blocking one (see stdoutDestination) it never blocks, at
 * exit either.
 */
export class LogDestination implements DestinationStream {
  private pending: string[] = [];
  private pendingBytes = 0;
  /** Batches the descriptor has not taken yet, oldest first (the first may start mid-line). */
  private queue: Buffer[] = [];
  private queued = 0;
  /** Lines that could not be written and were dropped. */
  dropped = 0;

  constructor(
    private readonly fd: number,
    /** A batch is written once it holds this many characters (or at flush). */
    private readonly minLength = 8 * 1024,
  ) {}

  write(line: string): void {
    this.pending.push(line);
    this.pendingBytes += line.length;
    if (this.pendingBytes >= this.minLength) this.flush();
  }

  /** Writes what is pending, now, as far as the descriptor takes it. */
  flush(): void {
    if (this.pending.length > 0) {
      const fresh = Buffer.from(this.pending.join(""));
      this.pending = [];
      this.pendingBytes = 0;
      this.queue.push(fresh);
      this.queued += fresh.length;
    }
    while (this.queue.length > 0) {
      const batch = this.queue[0]!;
      let at = 0;
      try {
        while (at < batch.length) at += writeSync(this.fd, batch, at, batch.length - at);
      } catch (e) {
        this.queue[0] = batch.subarray(at);
        this.queued -= at;
        if ((e as NodeJS.ErrnoException).code === "EAGAIN") this.trim();
        else this.drop(0);
        return;
      }
      this.queue.shift();
      this.queued -= batch.length;
    }
  }

  /** Keeps the oldest MAX_PENDING_BYTES queued, cut after a whole line; drops and counts the rest. */
  private trim(): void {
    let room = MAX_PENDING_BYTES;
    for (let i = 0; i < this.queue.length; i++) {
      const batch = this.queue[i]!;
      if (batch.length <= room) {
        room -= batch.length;
        continue;
      }
      const cut = room > 0 ? batch.lastIndexOf(10, room - 1) + 1 : 0;
      this.dropped += countLines(batch.subarray(cut));
      this.queued -= batch.length - cut;
      this.drop(i + 1);
      if (cut > 0) this.queue[i] = batch.subarray(0, cut);
      else this.queue.pop();
      return;
    }
  }

  /** Drops and counts the queued batches from the `from`th on. */
  private drop(from: number): void {
    for (const batch of this.queue.splice(from)) {
      this.dropped += countLines(batch);
      this.queued -= batch.length;
    }
  }
}

/**
 * The server's stdout (fd 1) as its log destination, non-blocking when it is a pipe or a socket
 * (a container runtime's log collector, `| tee`; docs/security.md, "Shutdown and logging", says
 * why): Node's own stream over fd 1 (`process.stdout`, through which nothing is written) opens it
 * with libuv, which sets O_NONBLOCK, so a full pipe is EAGAIN and LogDestination keeps 1 MiB and
 * drops past it. A regular file or a terminal is written synchronously.
 */
export function stdoutDestination(): LogDestination {
  let stat: Stats;
  try {
    stat = fstatSync(1);
  } catch {
    // No stdout (EBADF): every write fails, and is counted as dropped.
    return new LogDestination(1);
  }
  if (stat.isFIFO() || stat.isSocket()) void process.stdout;
  return new LogDestination(1);
}

function countLines(data: Buffer): number {
  let n = 0;
  for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10, at + 1)) n++;
  return n;
}
