import { spawn, type ChildProcessByStdio } from "node:child_process";
import { closeSync, openSync, readFileSync, realpathSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";

/** What a lock's holder tells a process that finds the directory taken. */
export interface LockHolder {
  pid: number;
  /** The holder's host name: a container's own, so a pid of another container is not taken for one of ours. */
  host?: string;
  /** The port it serves on, once it is bound. */
  port?: number;
}

/** One process's hold on an embedded store's data directory, until release() or its exit. */
export interface DirectoryLock {
  /** Adds what the holder tells others (its port, once bound). */
  describe(info: Partial<LockHolder>): void;
  release(): Promise<void>;
}

/** The data directory is held by another process: the embedded store has one writer. */
export class DirectoryInUseError extends Error {
  constructor(
    readonly dir: string,
    readonly holder: LockHolder | undefined,
  ) {
    const where = holder?.host !== undefined && holder.host !== hostname() ? ` on host ${holder.host}` : "";
    const who = holder
      ? `process ${holder.pid}${where}${holder.port === undefined ? "" : ` (serving on port ${holder.port})`}`
      : "another process";
    super(
      `the data directory ${dir} is in use by ${who}: the embedded store (PGlite) serves one process only. ` +
        "Stop that server first, give this one another PLATFORM_DATA_DIR, or run replicas on PostgreSQL (DATABASE_URL)",
    );
    this.name = "DirectoryInUseError";
  }
}

/**
 * The holder's name (pid, host and port), inside the data directory: written once the store is
 * open (DirectoryLock.describe), never before, since PGlite creates its cluster only in an empty
 * directory.
 */
export const LOCK_FILE = "platform.lock";
/** Without flock(1): the lock file itself, beside the directory (not in it, for the same reason). */
export const fallbackLockPath = (dir: string): string => `${dir}.lock`;
/** How long a refused process waits for a holder that has just taken the lock to write its name. */
const READ_TRIES = 5;
const READ_PAUSE_MS = 40;
/** How often, and how far apart, a lock found taken is tried again before refusing (about a second). */
const BUSY_TRIES = 5;
const BUSY_PAUSE_MS = 250;

/**
 * Takes `dir` for this process, or fails with DirectoryInUseError naming the holder
 * (docs/design.md, "Storage"). PGlite opens a directory without locking it, and two processes
 * on one directory each see only their own writes and lose one another's at the next start.
 *
 * The lock is flock(2) on the directory itself, so it holds for every process that reaches the
 * same directory, whatever its path, network or mount namespace (two containers mounting one
 * volume). Node has no flock, so a child `flock -x -n <dir>` takes it and holds it while it reads
 * a pipe from this process: when this process ends however it ends (SIGKILL, a crash) the pipe
 * closes, the child ends, and the kernel frees the lock. Once the store is open the holder writes
 * its pid, host and port into `platform.lock` in the directory for a refused process to name it.
 *
 * Without a flock program (macOS), a file beside the directory is created exclusively instead; one whose process is
 * gone is taken over under a second exclusive file, so two starters cannot both take it. A pid
 * reused since by another process, or a holder in another pid namespace, keeps it: remove the
 * file by hand then.
 */
export async function lockDirectory(dir: string): Promise<DirectoryLock> {
  const real = realpathSync(dir);
  return (await flockLock(real)) ?? fileLock(real);
}

/** The lock held by a flock(1) child; undefined when there is no flock program. */
async function flockLock(dir: string): Promise<DirectoryLock | undefined> {
  const path = join(dir, LOCK_FILE);
  let attempt = await tryFlock(dir);
  // A holder killed a moment ago frees the lock once its flock child has seen the pipe close:
  // a server restarted at once after a crash waits for that rather than being refused.
  for (let i = 1; attempt.outcome === "busy" && i < BUSY_TRIES; i++) {
    await new Promise((resolve) => setTimeout(resolve, BUSY_PAUSE_MS));
    attempt = await tryFlock(dir);
  }
  const { child, outcome } = attempt;
  if (outcome === "missing") return undefined;
  if (outcome !== "locked") {
    child.kill("SIGKILL");
    if (outcome === "busy") throw new DirectoryInUseError(dir, await readHolder(path));
    throw outcome;
  }
  child.stdout.destroy();
  child.stderr.destroy();
  // The lock must not keep a process alive that has nothing else to do.
  child.unref();
  (child.stdin as unknown as { unref(): void }).unref();
  const exited =
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const info: LockHolder = { pid: process.pid, host: hostname() };
  const write = () => writeFileSync(path, JSON.stringify(info), { mode: 0o600 });
  return {
    describe: (more) => {
      Object.assign(info, more);
      write();
    },
    release: async () => {
      // Waited for with the child counted again: unreferenced, a process with nothing else to do
      // (a test run's global setup closing its template store) ended here, before release returned.
      child.ref();
      child.stdin.end();
      await exited;
    },
  };
}

/** One `flock -n` child: "locked" when it holds the lock (and keeps it until its stdin ends). */
async function tryFlock(
  path: string,
): Promise<{ child: ChildProcessByStdio<Writable, Readable, Readable>; outcome: "locked" | "busy" | "missing" | Error }> {
  // The shell says it has the lock, then becomes `cat`, which holds the inherited descriptor
  // until its standard input (our pipe) ends.
  const child = spawn("flock", ["-x", "-n", path, "/bin/sh", "-c", "echo locked && exec cat >/dev/null"], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  const outcome = await new Promise<"locked" | "busy" | "missing" | Error>((resolve) => {
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("locked")) resolve("locked");
    });
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    child.once("error", (e: NodeJS.ErrnoException) => resolve(e.code === "ENOENT" ? "missing" : e));
    // flock exits 1 when -n finds the lock taken.
    child.once("exit", (code, signal) =>
      resolve(code === 1 ? "busy" : new Error(`flock on ${path} ended (${signal ?? code}) without taking the lock: ${err.trim()}`)),
    );
  });
  return { child, outcome };
}

/** The holder's name from its lock file; undefined when it has not written one yet. */
async function readHolder(path: string): Promise<LockHolder | undefined> {
  for (let i = 0; i < READ_TRIES; i++) {
    const holder = readHolderNow(path);
    if (holder) return holder;
    await new Promise((resolve) => setTimeout(resolve, READ_PAUSE_MS));
  }
  return undefined;
}

function readHolderNow(path: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, "utf8")) as Partial<LockHolder>;
    if (typeof parsed.pid !== "number") return undefined;
    return {
      pid: parsed.pid,
      ...(typeof parsed.host === "string" ? { host: parsed.host } : {}),
      ...(typeof parsed.port === "number" ? { port: parsed.port } : {}),
    };
  } catch {
    return undefined;
  }
}

function fileLock(dir: string, afterStale: () => void = () => {}): DirectoryLock {
  const path = fallbackLockPath(dir);
  const info: LockHolder = { pid: process.pid, host: hostname() };
  const create = (target: string, flags: string) => {
    const fd = openSync(target, flags, 0o600);
    try {
      writeSync(fd, JSON.stringify(info));
    } finally {
      closeSync(fd);
    }
  };
  const exclusive = (target: string): boolean => {
    try {
      create(target, "wx");
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw e;
    }
  };
  if (!exclusive(path)) {
    const holder = readHolderNow(path);
    if (holder && running(holder.pid)) throw new DirectoryInUseError(dir, holder);
    afterStale();
    // Left by a process that is gone. Removing it and creating ours is two steps, so a takeover
    // runs under a second exclusive file: two starters cannot both remove a file and both create
    // one, and the one that gets it looks again, since another may have taken over just before.
    const takeover = `${path}.takeover`;
    if (!exclusive(takeover)) {
      const taker = readHolderNow(takeover);
      if (taker && running(taker.pid)) throw new DirectoryInUseError(dir, taker);
      throw new Error(
        `${takeover} was left by a process that ended while taking over ${path}: remove it by hand once no server runs on ${dir}`,
      );
    }
    try {
      const again = readHolderNow(path);
      if (again && running(again.pid)) throw new DirectoryInUseError(dir, again);
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
      // Another starter that found no file at all may have created one since.
      if (!exclusive(path)) throw new DirectoryInUseError(dir, readHolderNow(path));
    } finally {
      unlinkSync(takeover);
    }
  }
  return {
    describe: (more) => {
      Object.assign(info, more);
      create(path, "w");
    },
    release: async () => {
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
    },
  };
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * For tests: the lock without flock(1), as on platforms that lack it; `afterStale` runs when this
 * starter has found the lock file stale, before it takes it over (where another may cut in).
 */
export const fileLockForTests = (dir: string, afterStale?: () => void): DirectoryLock => fileLock(realpathSync(dir), afterStale);
