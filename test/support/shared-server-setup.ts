// Vitest global setup for test/support/shared-server.ts and the store templates
// (store-templates.ts). The shared servers live until their worker ends and
// nobody calls their stop(), so this names their stores, and the templates, with
// a prefix of this run's own (other runs may share the PostgreSQL server) and
// removes whatever carries it once the run is over. It also gives the run a
// scratch directory of its own (on tmpfs where there is room) as TMPDIR.
import { randomBytes } from "node:crypto";
import { mkdir, rm, statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { postgresAdminUrl, SHARED_STORE_PREFIX_VARIABLE } from "./database.js";
import { makeStoreTemplates } from "./store-templates.js";

/** Where the run keeps its stores and other scratch files, when not the default below. */
const SCRATCH_VARIABLE = "PLATFORM_TEST_TMPDIR";
const SHM = "/dev/shm";
/** tmpfs smaller than this (a container's 64 MiB default) would fill up: the run stays on disk. */
const SHM_MIN_FREE = 4 * 1024 ** 3;

/**
 * The directory this run's temporary files go under: PLATFORM_TEST_TMPDIR when set, otherwise
 * /dev/shm when it is a tmpfs with room, otherwise the system's. The stores are what makes this
 * matter: a test PGlite writes its WAL and pages through synchronous file calls, and on this
 * machine's ext4 a copy of the store template took 330 ms of kernel time against 20 ms on tmpfs.
 */
async function scratchRoot(): Promise<string> {
  const chosen = process.env[SCRATCH_VARIABLE];
  if (chosen) return chosen;
  try {
    const fs = await statfs(SHM);
    if (fs.bavail * fs.bsize >= SHM_MIN_FREE) return SHM;
  } catch {
    // No /dev/shm (not Linux): the system's temporary directory.
  }
  return tmpdir();
}

export default async function setup(): Promise<() => Promise<void>> {
  // A database name as well as a directory name: lower case, digits and underscores.
  const prefix = `platform_shared_${randomBytes(5).toString("hex")}`;
  process.env[SHARED_STORE_PREFIX_VARIABLE] = prefix;
  // Every file's tmpdir() (stores, configurations, spawned servers' data) is this run's own
  // directory from here on: the workers and the processes they start inherit TMPDIR. The
  // Chromium setup, which runs first, keeps its unpacked browser where later runs find it.
  const scratch = join(await scratchRoot(), `${prefix}_tmp`);
  await mkdir(scratch, { recursive: true, mode: 0o700 });
  process.env["TMPDIR"] = scratch;
  const teardown = async (): Promise<void> => {
    await rm(scratch, { recursive: true, force: true });
    const adminUrl = postgresAdminUrl();
    if (!adminUrl) return;
    // Side by side: each DROP DATABASE waits for a checkpoint, and the ones requested together share one.
    const admin = postgres(adminUrl, { max: 8, onnotice: () => {} });
    try {
      const rows = await admin<{ datname: string }[]>`select datname from pg_database`;
      const ours = rows.filter((r) => r.datname.startsWith(`${prefix}_`));
      await Promise.all(ours.map(({ datname }) => admin.unsafe(`drop database if exists ${datname} with (force)`)));
    } finally {
      await admin.end({ timeout: 5 });
    }
  };
  // The templates carry the prefix too, so the same teardown removes them, even half made.
  try {
    await makeStoreTemplates(prefix, postgresAdminUrl());
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}
