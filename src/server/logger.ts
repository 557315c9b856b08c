import { writeSync } from "node:fs";
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

/** Lines kept while the destination is full (EAGAIN) before further ones are dropped. */
const MAX_PENDING_BYTES = 1024 * 1024;

/**
 * Where the server's log lines go (a file descriptor, stdout in production): lines are
 * batched and written with write(2), and a destination that fails never stops the server
 * (docs/security.md, "Shutdown and logging"). A closed pipe (EPIPE), a bad descriptor (EBADF) or
 * any other error drops the batch; a full non-blocking pipe (EAGAIN) keeps up to 1 MiB for the
 * next flush and drops beyond it. Every line dropped is counted (`dropped`, shown in /metrics).
 * Nothing here waits or retries: pino's own destination retried EPIPE every 100 ms forever
 * in flushSync, and without an error listener a failed write killed the process.
 */
export class LogDestination implements DestinationStream {
  private pending: string[] = [];
  private pendingBytes = 0;
  private held: Buffer | undefined;
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

  /** Writes what is pending, now. */
  flush(): void {
    if (this.pending.length === 0 && !this.held) return;
    const fresh = Buffer.from(this.pending.join(""));
    this.pending = [];
    this.pendingBytes = 0;
    let data = this.held ? Buffer.concat([this.held, fresh]) : fresh;
    this.held = undefined;
    let at = 0;
    try {
      while (at < data.length) at += writeSync(this.fd, data, at, data.length - at);
    } catch (e) {
      data = data.subarray(at);
      if ((e as NodeJS.ErrnoException).code === "EAGAIN" && data.length <= MAX_PENDING_BYTES) {
        this.held = data;
        return;
      }
      this.dropped += countLines(data);
    }
  }
}

function countLines(data: Buffer): number {
  let n = 0;
  for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10, at + 1)) n++;
  return n;
}
