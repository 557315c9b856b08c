import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import net from "node:net";
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { DirectoryInUseError, LOCK_FILE, fallbackLockPath, fileLockForTests, lockDirectory, type DirectoryLock } from "./directory-lock.js";

const held: DirectoryLock[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const lock of held.splice(0)) await lock.release();
  for (const dir of dirs.splice(0)) {
    // The lock file without flock, and its takeover file, are beside the directory.
    for (const path of [dir, fallbackLockPath(dir), `${fallbackLockPath(dir)}.takeover`]) await rm(path, { recursive: true, force: true });
  }
});

async function newDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "platform-lock-"));
  dirs.push(dir);
  return dir;
}

const refusal = (p: Promise<unknown>): Promise<DirectoryInUseError> =>
  p.then(
    () => {
      throw new Error("the lock was taken twice");
    },
    (e: unknown) => {
      expect(e).toBeInstanceOf(DirectoryInUseError);
      return e as DirectoryInUseError;
    },
  );

const MODULE = fileURLToPath(new URL("./directory-lock.ts", import.meta.url));
/** Whether this machine lets the test make a network and mount namespace (root, unshare(1)). */
const canUnshare = ((): boolean => {
  try {
    execFileSync("unshare", ["-n", "-m", "true"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/**
 * Another node process that takes the lock on `dir` (the file lock when `file`), says "held {pid}"
 * or "refused {message}", then keeps it while `hold` or lets its event loop end. `prefix` runs it
 * under another command (unshare).
 */
async function lockingProcess(dir: string, opts: { hold?: boolean; file?: boolean; prefix?: string[] } = {}) {
  const script = join(await newDir(), "lock.mjs");
  await writeFile(
    script,
    `import { lockDirectory, fileLockForTests } from ${JSON.stringify(MODULE)};
const dir = process.argv[2];
try {
  const lock = await (${opts.file ? "fileLockForTests(dir)" : "lockDirectory(dir)"});
  lock.describe({ port: 5151 });
  console.log("held " + process.pid);
  ${opts.hold ? "setInterval(() => {}, 1000);" : ""}
} catch (e) {
  console.log("refused " + e.message);
}
`,
  );
  const [command, ...args] = [...(opts.prefix ?? []), process.execPath, "--import", "tsx", script, dir];
  const child = spawn(command!, args, { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const said = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("\n")) resolve(out.trim());
    });
    void exited.then(() => reject(new Error(`the locking process ended saying ${JSON.stringify(out)}`)));
  });
  return { child, said, exited };
}

describe("lockDirectory", () => {
  it("refuses a second hold on a directory, naming the holder's pid and port", async () => {
    const dir = await newDir();
    const first = await lockDirectory(dir);
    held.push(first);
    first.describe({ port: 4242 });
    const second = await refusal(lockDirectory(dir));
    expect(second.holder).toEqual({ pid: process.pid, host: hostname(), port: 4242 });
    expect(second.message).toContain(`process ${process.pid} (serving on port 4242)`);
    expect(second.message).toContain(dir);
  });

  it("leaves a new directory empty until the holder describes itself: PGlite makes its cluster only in an empty one", async () => {
    const dir = await newDir();
    const lock = await lockDirectory(dir);
    held.push(lock);
    expect(await readdir(dir)).toEqual([]);
    lock.describe({});
    expect(await readdir(dir)).toEqual([LOCK_FILE]);
  });

  it("is the same lock through a symbolic link to the directory", async () => {
    const dir = await newDir();
    const link = join(await newDir(), "link");
    await symlink(dir, link);
    held.push(await lockDirectory(dir));
    await refusal(lockDirectory(link));
  });

  it("can be taken again once released, and other directories are not affected", async () => {
    const dir = await newDir();
    const first = await lockDirectory(dir);
    held.push(await lockDirectory(await newDir()));
    await first.release();
    held.push(await lockDirectory(dir));
  });

  it("refuses a process in another network and mount namespace that reaches the directory by a bind mount (two containers on one volume)", async () => {
    const dir = await newDir();
    const first = await lockDirectory(dir);
    held.push(first);
    first.describe({ port: 4343 });
    // Where unshare(1) cannot make namespaces, another process on the same path at least.
    const mount = join(await newDir(), "mounted");
    await mkdir(mount);
    const prefix = canUnshare ? ["unshare", "-n", "-m", "sh", "-c", `mount --bind "$0" "$1" && shift && exec "$@"`, dir, mount] : [];
    const other = await lockingProcess(canUnshare ? mount : dir, { prefix });
    expect(other.said).toContain("refused");
    expect(other.said).toContain(`in use by process ${process.pid} (serving on port 4343)`);
    expect(await other.exited).toBe(0);
  });

  it("cannot be blocked by another user binding the abstract socket name the lock once used", async () => {
    const dir = await newDir();
    const name = `\0platform-api-store-${createHash("sha256").update(realpathSync(dir)).digest("hex").slice(0, 40)}`;
    const squatter = net.createServer();
    await new Promise<void>((resolve, reject) => squatter.once("error", reject).listen(name, resolve));
    try {
      held.push(await lockDirectory(dir));
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  });

  it("is freed as soon as its holder is killed with SIGKILL, and does not keep a process alive that has nothing else to do", async () => {
    const dir = await newDir();
    const holder = await lockingProcess(dir, { hold: true });
    expect(holder.said).toBe(`held ${holder.child.pid}`);
    const refused = await refusal(lockDirectory(dir));
    expect(refused.holder).toMatchObject({ pid: holder.child.pid, port: 5151 });

    holder.child.kill("SIGKILL");
    await holder.exited;
    // The flock child sees its pipe close and ends; give a busy machine time.
    let lock: DirectoryLock | undefined;
    for (let i = 0; !lock && i < 100; i++) {
      lock = await lockDirectory(dir).catch(async (e: unknown) => {
        if (!(e instanceof DirectoryInUseError)) throw e;
        await new Promise((resolve) => setTimeout(resolve, 100));
        return undefined;
      });
    }
    expect(lock).toBeDefined();
    await lock!.release();

    // One that takes the lock and has nothing more to do exits by itself, and frees it.
    const idle = await lockingProcess(dir);
    expect(idle.said).toBe(`held ${idle.child.pid}`);
    expect(await idle.exited).toBe(0);
    held.push(await lockDirectory(dir));
  }, 60_000);
});

describe("DirectoryLock.release", () => {
  it("returns in a process that has nothing else to do, which then goes on past it", async () => {
    const dir = await newDir();
    const script = join(await newDir(), "release.mjs");
    await writeFile(
      script,
      `import { lockDirectory } from ${JSON.stringify(MODULE)};
const lock = await lockDirectory(process.argv[2]);
await lock.release();
console.log("released");
`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", script, dir], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: "released" });
    held.push(await lockDirectory(dir));
  }, 60_000);
});

describe("the lock file where there is no flock program", () => {
  it("refuses a second hold naming the holder, and is taken over once its process is gone", async () => {
    const dir = await newDir();
    const first = fileLockForTests(dir);
    first.describe({ port: 4444 });
    const second = await refusal(Promise.resolve().then(() => fileLockForTests(dir)));
    expect(second.message).toContain(`process ${process.pid} (serving on port 4444)`);
    await first.release();

    // A pid no process has (beyond pid_max).
    await writeFile(fallbackLockPath(dir), JSON.stringify({ pid: 2 ** 30 }));
    held.push(fileLockForTests(dir));
  });

  it("lets only one of two starters that both find a stale lock file take it, whichever order their steps run in", async () => {
    const dir = await newDir();
    await writeFile(fallbackLockPath(dir), JSON.stringify({ pid: 2 ** 30 }));
    let second: DirectoryLock | undefined;
    // The second starter runs from start to end after the first has found the file stale and
    // before it takes it over.
    const first = await Promise.resolve()
      .then(() => fileLockForTests(dir, () => void (second = fileLockForTests(dir))))
      .then(
        (lock) => lock,
        (e: unknown) => e,
      );
    if (second) held.push(second);
    if (!(first instanceof Error)) held.push(first as DirectoryLock);
    expect(second).toBeDefined();
    expect(first).toBeInstanceOf(DirectoryInUseError);
    expect((first as Error).message).toContain(`in use by process ${process.pid}`);
  });

  it("refuses clearly when a takeover was left half done by a process that is gone", async () => {
    const dir = await newDir();
    await writeFile(fallbackLockPath(dir), JSON.stringify({ pid: 2 ** 30 }));
    await writeFile(`${fallbackLockPath(dir)}.takeover`, JSON.stringify({ pid: 2 ** 30 }));
    expect(() => fileLockForTests(dir)).toThrow(/\.lock\.takeover was left by a process that ended .*remove it by hand/);
  });
});
