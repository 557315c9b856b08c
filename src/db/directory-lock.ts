import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, realpathSync, unlinkSync, writeSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";

/** What a lock's holder tells a process that finds the directory taken. */
export interface LockHolder {
  pid: number;
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
    const who = holder ? `process ${holder.pid}${holder.port === undefined ? "" : ` (serving on port ${holder.port})`}` : "another process";
    super(
      `the data directory ${dir} is in use by ${who}: the embedded store (PGlite) serves one process only. ` +
        "Stop that server first, give this one another PLATFORM_DATA_DIR, or run replicas on PostgreSQL (DATABASE_URL)",
    );
    this.name = "DirectoryInUseError";
  }
}

const ASK_MS = 2000;
/** The lock file of platforms without Linux's abstract sockets. */
const LOCK_FILE = "platform.lock";

/**
 * Takes `dir` for this process, or fails with DirectoryInUseError naming the holder
 * (docs/design.md, "Storage"). PGlite opens a directory without locking it, and two processes
 * on one directory each see only their own writes and lose one another's at the next start.
 *
 * On Linux the lock is a Unix socket bound in the abstract namespace under a name made from the
 * directory's real path: the kernel lets one process bind a name, and frees it when the process
 * ends however it ends (SIGKILL, a crash), so a stale lock cannot outlive its holder. The holder
 * answers whoever connects with its pid and port. Elsewhere (macOS, where abstract sockets do not
 * exist) a file `platform.lock` holds the holder's pid and port, written exclusively; one whose
 * process is gone is taken over (a pid reused since by another process would keep it: remove the
 * file by hand then).
 */
export async function lockDirectory(dir: string): Promise<DirectoryLock> {
  const real = realpathSync(dir);
  return process.platform === "linux" ? socketLock(real) : fileLock(real);
}

async function socketLock(dir: string): Promise<DirectoryLock> {
  const name = `\0platform-api-store-${createHash("sha256").update(dir).digest("hex").slice(0, 40)}`;
  const info: LockHolder = { pid: process.pid };
  const server = net.createServer((socket) => {
    socket.on("error", () => socket.destroy());
    socket.end(JSON.stringify(info));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(name, () => resolve());
    });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    throw new DirectoryInUseError(dir, await askHolder(name));
  }
  // The lock must not keep a process alive that has nothing else to do.
  server.unref();
  return {
    describe: (more) => void Object.assign(info, more),
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The holder's answer; undefined when it does not give one in time. */
function askHolder(name: string): Promise<LockHolder | undefined> {
  return new Promise((resolve) => {
    let text = "";
    const socket = net.connect(name);
    socket.setTimeout(ASK_MS, () => socket.destroy());
    socket.on("data", (chunk: Buffer) => (text += chunk.toString()));
    socket.on("error", () => {});
    socket.on("close", () => resolve(parseHolder(text)));
  });
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(text) as Partial<LockHolder>;
    if (typeof parsed.pid !== "number") return undefined;
    return { pid: parsed.pid, ...(typeof parsed.port === "number" ? { port: parsed.port } : {}) };
  } catch {
    return undefined;
  }
}

function fileLock(dir: string): DirectoryLock {
  const path = join(dir, LOCK_FILE);
  const info: LockHolder = { pid: process.pid };
  const write = (flags: string) => {
    const fd = openSync(path, flags, 0o600);
    try {
      writeSync(fd, JSON.stringify(info));
    } finally {
      closeSync(fd);
    }
  };
  for (let attempt = 0; ; attempt++) {
    try {
      write("wx");
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) throw e;
      let holder: LockHolder | undefined;
      try {
        holder = parseHolder(readFileSync(path, "utf8"));
      } catch {
        holder = undefined;
      }
      if (holder && running(holder.pid)) throw new DirectoryInUseError(dir, holder);
      // Left by a process that is gone: taken over.
      unlinkSync(path);
    }
  }
  return {
    describe: (more) => {
      Object.assign(info, more);
      write("w");
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
