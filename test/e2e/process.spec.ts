import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import net from "node:net";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMPILED_SERVER, ensureCompiledServer } from "../support/compiled-server.js";
import { postgresAdminUrl } from "../support/database.js";
import { takePostgresDatabase } from "../support/store-pool.js";
import { copyPgliteTemplate } from "../support/store-templates.js";

// `npm start` as an operator runs it: compiled JavaScript under plain node,
// stopped by a signal to the process they started. On the back-end of the run: PGlite (the
// default, a data directory), or a PostgreSQL database of the worker's pool (store-pool.ts),
// given back once the server has exited.

const ENTRY = COMPILED_SERVER;
const dataDirs: string[] = [];
/** Pooled databases, each with the server that used it: given back only once that server is gone. */
const databases: { release: () => void; server: number | undefined }[] = [];

beforeAll(() => {
  // npm ci builds dist/ (prepare); built again here when it is missing or older than the sources.
  ensureCompiledServer();
}, 120_000);
afterAll(async () => {
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
  // A server still running (a test that failed before stopping it) keeps its database: the run's teardown drops it.
  for (const { release, server } of databases) if (server !== undefined && !alive(server)) release();
});

/**
 * A data directory for one server. On PGlite it holds a migrated store
 * (test/support/store-templates.ts): what is under test is the process, and a store made from
 * nothing (initdb, every migration) cost the first start 1.7 core-seconds.
 */
async function newDataDir(pglite = !postgresAdminUrl()): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "platform-process-"));
  dataDirs.push(dir);
  if (pglite) await copyPgliteTemplate(join(dir, "pglite"), "migrated");
  return dir;
}

interface Started {
  npm: ChildProcess;
  port: number;
  exited: Promise<number | null>;
  /** What the server logged up to the line with its port. */
  log: string;
}

async function npmStart(dataDir: string, extra: Record<string, string> = {}): Promise<Started> {
  return start(["npm", "start", "--silent"], dataDir, extra);
}

/** The compiled server under node itself, no npm between: the test signals it and reads its output. */
async function nodeStart(dataDir: string, extra: Record<string, string> = {}): Promise<Started> {
  return start([process.execPath, ENTRY], dataDir, extra);
}

/** The environment of a server on `dataDir`: on a pooled PostgreSQL database unless `pglite`. */
async function serverEnv(
  dataDir: string,
  extra: Record<string, string>,
  pglite = false,
): Promise<{ env: NodeJS.ProcessEnv; release?: () => void }> {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0", HOST: "127.0.0.1", PLATFORM_DATA_DIR: dataDir, LOG_LEVEL: "info", ...extra };
  delete env["DATABASE_URL"];
  const database = postgresAdminUrl() && !pglite ? await takePostgresDatabase() : undefined;
  if (database) env["DATABASE_URL"] = database.store;
  return { env, ...(database ? { release: database.release } : {}) };
}

async function start([command, ...args]: string[], dataDir: string, extra: Record<string, string>, pglite = false): Promise<Started> {
  const { env, release } = await serverEnv(dataDir, extra, pglite);
  const child = spawn(command!, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    // Generous: the machines the suite runs on may be busy.
    const timer = setTimeout(() => reject(new Error(`no port in 90 s: ${out}`)), 90_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  // The server, not npm, holds the database's connections, and it may outlive npm.
  if (release) databases.push({ release, server: command === "npm" ? serverPid(child) : child.pid });
  return { npm: child, port, exited, log: out };
}

/** The server: npm's child (the start script execs node, so no shell stands between them). */
function serverPid(npm: ChildProcess): number | undefined {
  const out = execFileSync("ps", ["-o", "pid=,args=", "--ppid", String(npm.pid)]).toString();
  const line = out.split("\n").find((l) => /(^|\s)node\s/.test(l) && l.includes(ENTRY));
  return line ? Number(line.trim().split(/\s+/)[0]) : undefined;
}

/**
 * Whether `pid` still runs. An orphan that has exited stays a zombie until the init process reaps
 * it, which took one to two seconds here: it counts as gone (its state in /proc is Z).
 */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = readFileSyncOrEmpty(`/proc/${pid}/stat`);
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
};

function readFileSyncOrEmpty(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (check()) return true;
  return check();
}

// The two starts below run side by side, each on a data directory of its own: most of their time
// is waiting for a process to start or to end.
describe.concurrent("npm start", () => {
  describe("npm start, stopped by SIGTERM", () => {
    it("runs node on the compiled server, which writes the admin token; SIGTERM to npm drains and exits 0 with the port free", async () => {
      const dataDir = await newDataDir();
      const s = await npmStart(dataDir);
      // The defaults on a developer's machine turn the development sign-in on: said at every start.
      expect(s.log).toMatch(/"level":40,[^\n]*"development":true,[^\n]*"msg":"development sign-in is on \(PLATFORM_DEV_LOGIN\)/);
      expect(s.log).not.toContain("development egress is on");
      expect((await fetch(`http://127.0.0.1:${s.port}/readyz`)).status).toBe(200);
      const token = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
      const groups = await fetch(`http://127.0.0.1:${s.port}/iam/v2beta1/groups`, { headers: { authorization: `Bearer ${token}` } });
      expect(groups.status).toBe(200);
      const pid = serverPid(s.npm);
      expect(pid).toBeDefined();
      s.npm.kill("SIGTERM");
      expect(await s.exited).toBe(0);
      expect(await until(() => !alive(pid!), 5_000)).toBe(true);
      await expect(fetch(`http://127.0.0.1:${s.port}/healthz`)).rejects.toThrow();
    }, 60_000);
  });

  // One start for both (a start is two core-seconds of node and npm): what it read from the .env
  // file, then what becomes of the server when npm is killed.
  describe("npm start with a .env file, then npm killed outright", () => {
    let s: Started;
    beforeAll(async () => {
      const dataDir = await newDataDir();
      const file = join(dataDir, "test.env");
      // LOG_LEVEL=silent from the file would hide the port line: the environment's info wins.
      // A development setting left in a .env file is easy to miss: it is a warning at start.
      await writeFile(file, "PLATFORM_BASE_URL=http://from-the-env-file.example\nLOG_LEVEL=silent\nPLATFORM_ALLOW_INSECURE_ISSUERS=true\n");
      s = await npmStart(dataDir, { PLATFORM_ENV_FILE: file });
    }, 60_000);
    afterAll(() => {
      s?.npm.kill("SIGKILL");
    });

    it("reads settings from the .env file (PLATFORM_ENV_FILE here); the environment wins", () => {
      expect(s.log).toContain('"url":"http://from-the-env-file.example"');
    });

    it("warns at start of each development-only setting in force: development egress; not the development sign-in, off behind a public base URL", () => {
      expect(s.log).toMatch(
        /"level":40,[^\n]*"development":true,[^\n]*"msg":"development egress is on \(PLATFORM_ALLOW_INSECURE_ISSUERS\)/,
      );
      expect(s.log).not.toMatch(/development sign-in is on|DEVELOPMENT SIGN-IN/);
    });

    it("leaves no orphan when npm is killed outright", async () => {
      const pid = serverPid(s.npm);
      expect(pid).toBeDefined();
      s.npm.kill("SIGKILL");
      await s.exited;
      expect(await until(() => !alive(pid!), 10_000)).toBe(true);
    }, 60_000);
  });
});

/**
 * A request whose body never finishes: it stays in flight until the server cuts it off. It carries
 * the admin token, as a body is read only once its caller is authenticated.
 */
async function heldRequest(port: number, dataDir: string): Promise<net.Socket> {
  const token = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.write(
        `POST /iam/v2beta1/groups HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"displayName"`,
      );
      // Long enough for the server to have started on it.
      setTimeout(() => resolve(socket), 1000);
    });
    socket.on("error", () => {});
    socket.once("error", reject);
  });
}

const seconds = (since: number) => (Date.now() - since) / 1000;

describe("shutdown and logging", () => {
  it("cuts off a request still in flight at PLATFORM_SHUTDOWN_TIMEOUT and exits 1, without waiting for it", async () => {
    const dataDir = await newDataDir();
    const s = await nodeStart(dataDir, { PLATFORM_SHUTDOWN_TIMEOUT: "2s" });
    const held = await heldRequest(s.port, dataDir);
    const closed = new Promise<void>((resolve) => held.once("close", () => resolve()));
    const signalled = Date.now();
    s.npm.kill("SIGTERM");
    expect(await s.exited).toBe(1);
    // The drain had most of the 2 s; generous upper bound for a loaded machine.
    expect(seconds(signalled)).toBeGreaterThan(1.2);
    expect(seconds(signalled)).toBeLessThan(15);
    await closed;
  }, 180_000);

  it("exits at once on a second signal, while a request holds the drain open", async () => {
    const dataDir = await newDataDir();
    const s = await nodeStart(dataDir);
    await heldRequest(s.port, dataDir);
    s.npm.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 500));
    // Still draining (the default timeout is 25 s): the request holds it.
    expect(alive(s.npm.pid!)).toBe(true);
    const second = Date.now();
    s.npm.kill("SIGTERM");
    expect(await s.exited).toBe(1);
    expect(seconds(second)).toBeLessThan(10);
  }, 180_000);

  it("keeps serving when the reader of its log pipe is gone, counts the dropped lines in /metrics, and exits promptly on SIGTERM", async () => {
    const s = await nodeStart(await newDataDir());
    // The reader goes away: every further write to the pipe fails with EPIPE.
    s.npm.stdout!.destroy();
    for (let i = 0; i < 50; i++) expect((await fetch(`http://127.0.0.1:${s.port}/healthz`)).status).toBe(200);
    // Lines are written in batches at least every half second.
    await new Promise((r) => setTimeout(r, 1200));
    const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`)).text();
    const dropped = Number(/^platform_log_lines_dropped_total (\d+)/m.exec(metrics)?.[1]);
    expect(dropped).toBeGreaterThanOrEqual(50);
    const signalled = Date.now();
    s.npm.kill("SIGTERM");
    expect(await s.exited).toBe(0);
    expect(seconds(signalled)).toBeLessThan(10);
  }, 180_000);
  it("keeps answering /healthz when nobody reads its log pipe, drops and counts the lines past its 1 MiB buffer, and exits within PLATFORM_SHUTDOWN_TIMEOUT on SIGTERM", async () => {
    const s = await nodeStart(await newDataDir(), { PLATFORM_SHUTDOWN_TIMEOUT: "3s" });
    try {
      // The reader stalls (a log collector that stopped reading): once the stream's own buffer is
      // full it stops reading the pipe, and the pipe (64 KiB) fills.
      s.npm.stdout!.removeAllListeners("data");
      s.npm.stdout!.pause();
      // Each request logs a line with its path: 300 lines of 8 KiB fill the pipe ~37 times over.
      const path = `/no-such-route/${"x".repeat(8 * 1024)}`;
      for (let batch = 0; batch < 30; batch++) {
        const sent = Array.from({ length: 10 }, () =>
          fetch(`http://127.0.0.1:${s.port}${path}`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.arrayBuffer()),
        );
        await Promise.all(sent);
      }
      expect((await fetch(`http://127.0.0.1:${s.port}/healthz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
      // Lines are written in batches at least every half second.
      await new Promise((r) => setTimeout(r, 1200));
      const metrics = await (await fetch(`http://127.0.0.1:${s.port}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
      const dropped = Number(/^platform_log_lines_dropped_total (\d+)/m.exec(metrics)?.[1]);
      // 2.4 MiB logged, at most 1 MiB kept and ~0.2 MiB in the pipe and its reader's buffer.
      expect(dropped).toBeGreaterThanOrEqual(100);
      const signalled = Date.now();
      s.npm.kill("SIGTERM");
      const code = await Promise.race([s.exited, new Promise<string>((r) => setTimeout(() => r("still running"), 15_000))]);
      expect(code).toBe(0);
      expect(seconds(signalled)).toBeLessThan(10);
    } finally {
      s.npm.kill("SIGKILL");
    }
  }, 180_000);
});

/** Runs the server to its exit (a start that is refused): its exit code and what it wrote to stderr. */
async function refusedStart(dataDir: string, prefix: string[] = []): Promise<{ code: number | null; stderr: string }> {
  const { env } = await serverEnv(dataDir, {}, true);
  const [command, ...args] = [...prefix, process.execPath, ENTRY];
  const child = spawn(command!, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stderr };
}

/** Whether this machine lets the test run a process in a network namespace of its own (root, unshare(1)). */
function canUnshareNetwork(): boolean {
  try {
    execFileSync("unshare", ["-n", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

// The lock is the embedded store's (PGlite): these run on PGlite whatever the run's back-end.
describe("one server per embedded data directory", () => {
  it("refuses a second server on the directory, also from another network namespace, naming the first one's pid and port; once the first is killed outright a new one starts", async () => {
    const dataDir = await newDataDir(true);
    const first = await start([process.execPath, ENTRY], dataDir, {}, true);
    const second = await refusedStart(dataDir);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`in use by process ${first.npm.pid} (serving on port ${first.port})`);
    expect(second.stderr).toContain("serves one process only");
    // Nor in a network namespace of its own, as a container on the same volume is (where this
    // machine lets the test make one; otherwise as another process again).
    const isolated = await refusedStart(dataDir, canUnshareNetwork() ? ["unshare", "-n"] : []);
    expect(isolated.code).toBe(1);
    expect(isolated.stderr).toContain(`in use by process ${first.npm.pid} (serving on port ${first.port})`);
    // The first is untouched.
    expect((await fetch(`http://127.0.0.1:${first.port}/readyz`)).status).toBe(200);

    first.npm.kill("SIGKILL");
    await first.exited;
    const third = await start([process.execPath, ENTRY], dataDir, {}, true);
    expect((await fetch(`http://127.0.0.1:${third.port}/readyz`)).status).toBe(200);
    third.npm.kill("SIGTERM");
    expect(await third.exited).toBe(0);
  }, 240_000);
});
