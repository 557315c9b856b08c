import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
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
async function newDataDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "platform-process-"));
  dataDirs.push(dir);
  if (!postgresAdminUrl()) await copyPgliteTemplate(join(dir, "pglite"), "migrated");
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
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: "0", HOST: "127.0.0.1", PLATFORM_DATA_DIR: dataDir, LOG_LEVEL: "info", ...extra };
  const database = postgresAdminUrl() ? await takePostgresDatabase() : undefined;
  if (database) env["DATABASE_URL"] = database.store;
  const npm = spawn("npm", ["start", "--silent"], { env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise<number | null>((resolve) => npm.once("exit", (code) => resolve(code)));
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no port in 30 s: ${out}`)), 30_000);
    npm.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  // The server, not npm, holds the database's connections, and it may outlive npm.
  if (database) databases.push({ release: database.release, server: serverPid(npm) });
  return { npm, port, exited, log: out };
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
      expect(s.log).toMatch(/"level":40,[^\n]*"development":true,[^\n]*"msg":"development egress is on \(PLATFORM_ALLOW_INSECURE_ISSUERS\)/);
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
