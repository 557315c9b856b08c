import { mkdir, readFile, readdir, rm, statfs, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

// The run's scratch directory (made by the global setup, shared-server-setup.ts): every test
// file's tmpdir() is in it, and the teardown removes it. The stores are why it exists: a test
// PGlite writes its WAL and pages through synchronous file calls, and on this machine's ext4 a
// copy of the store template cost 330 ms of kernel time, against 20 ms on tmpfs.

/** Where the run keeps its scratch directory, when not the default below. */
const PARENT_VARIABLE = "PLATFORM_TEST_TMPDIR";
/** The system's temporary directory, as it was before the run set TMPDIR to its own. */
const SYSTEM_TMPDIR_VARIABLE = "PLATFORM_TEST_SYSTEM_TMPDIR";
const SHM = "/dev/shm";
/** tmpfs with less free than this (a container's 64 MiB default) would fill up: the run stays on disk. */
const SHM_MIN_FREE = 4 * 1024 ** 3;
const SUFFIX = "_tmp";
const OWNER_FILE = "owner.pid";

/** PLATFORM_TEST_TMPDIR when set, otherwise /dev/shm when it is a tmpfs with room, otherwise the system's. */
async function parentDirectory(): Promise<string> {
  const chosen = process.env[PARENT_VARIABLE];
  if (chosen) return resolve(chosen);
  try {
    const fs = await statfs(SHM);
    if (fs.bavail * fs.bsize >= SHM_MIN_FREE) return SHM;
  } catch {
    // No /dev/shm (not Linux).
  }
  return tmpdir();
}

/** Whether process `pid` is running (EPERM: running as another user). */
export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
};

/** Scratch directories of runs that were killed (their process is gone): on tmpfs they would hold memory until a reboot. */
async function removeAbandoned(parent: string, namePrefix: string): Promise<void> {
  for (const name of await readdir(parent).catch(() => [])) {
    if (!name.startsWith(namePrefix) || !name.endsWith(SUFFIX)) continue;
    const pid = Number(await readFile(join(parent, name, OWNER_FILE), "utf8").catch(() => ""));
    if (pid > 0 && !alive(pid)) await rm(join(parent, name), { recursive: true, force: true });
  }
}

/**
 * Makes the run's scratch directory `<parent>/<prefix>_tmp` and points TMPDIR at it, so that the
 * workers and the processes they start inherit it; returns what undoes both.
 */
export async function useRunScratch(prefix: string, abandonedPrefix: string): Promise<() => Promise<void>> {
  const parent = await parentDirectory();
  await removeAbandoned(parent, abandonedPrefix);
  const dir = join(parent, `${prefix}${SUFFIX}`);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, OWNER_FILE), String(process.pid));
  const saved = process.env["TMPDIR"];
  process.env[SYSTEM_TMPDIR_VARIABLE] = tmpdir();
  process.env["TMPDIR"] = dir;
  return async () => {
    if (saved === undefined) delete process.env["TMPDIR"];
    else process.env["TMPDIR"] = saved;
    delete process.env[SYSTEM_TMPDIR_VARIABLE];
    // The workers' shared servers may still be writing to their stores: a few tries.
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  };
}

/** The system's temporary directory, for files meant to outlive the run (its own TMPDIR is removed at its end). */
export function systemTmpdir(): string {
  return process.env[SYSTEM_TMPDIR_VARIABLE] ?? tmpdir();
}

/**
 * The environment for a process that runs the TypeScript sources through tsx: with the system's
 * TMPDIR, where tsx keeps the compile cache that later runs reuse (in the run's own it started
 * cold every time, 0.8 s more for a server).
 */
export function withSystemTmpdir(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, TMPDIR: systemTmpdir() };
}
