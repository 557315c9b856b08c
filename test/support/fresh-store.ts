import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/index.js";
import { createFreshDatabase, postgresAdminUrl, type FreshDatabase } from "./database.js";
import { copyPgliteTemplate, postgresTemplate } from "./store-templates.js";

/**
 * A store that outlives the handles opened on it, new for each test: a PGlite
 * directory (`dir/pglite`), or a fresh PostgreSQL database when DATABASE_URL is set; neither
 * migrated yet. Closing
 * a handle and opening another on it is a restart. Registers its own
 * beforeEach/afterEach; read `dir` and `databaseUrl` inside tests.
 */
export function freshStorePerTest(prefix: string): { readonly dir: string; readonly databaseUrl: string | undefined } {
  let dir = "";
  let fresh: FreshDatabase | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
    const admin = postgresAdminUrl();
    fresh = admin ? await createFreshDatabase(admin) : undefined;
    // Initialized, not migrated: these stores show what opening one does (store-templates.ts).
    if (!fresh) await copyPgliteTemplate(join(dir, "pglite"), "empty");
  });
  afterEach(async () => {
    await fresh?.drop();
    await rm(dir, { recursive: true, force: true });
  });
  return {
    get dir() {
      return dir;
    },
    get databaseUrl() {
      return fresh?.url;
    },
  };
}

/**
 * A migrated store opened for a unit test, on the back-end of the run: a copy of the migrated
 * PGlite template (a tenth of the CPU of a new in-memory cluster), or a PostgreSQL database made
 * from the migrated template when DATABASE_URL is set. `close` closes and removes it.
 */
export async function openMigratedStore(prefix: string): Promise<{ handle: DatabaseHandle; close: () => Promise<void> }> {
  const admin = postgresAdminUrl();
  const fresh = admin ? await createFreshDatabase(admin, undefined, postgresTemplate()) : undefined;
  const dir = fresh ? "" : await mkdtemp(join(tmpdir(), `${prefix}-`));
  if (dir) await copyPgliteTemplate(join(dir, "pglite"), "migrated");
  const handle = await openDatabase(fresh ? { pgliteDir: "memory://", databaseUrl: fresh.url } : { pgliteDir: join(dir, "pglite") });
  return {
    handle,
    close: async () => {
      await handle.close();
      await fresh?.drop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A PGlite data directory holding a copy of the initialized (not migrated) template, for specs
 * about PGlite itself: opening it skips the initdb that a new in-memory PGlite runs, a second of
 * CPU. Without the global setup the directory is empty and PGlite initializes it. `remove`
 * deletes it (close the PGlite first).
 */
export async function initializedPgliteDir(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const parent = await mkdtemp(join(tmpdir(), `${prefix}-`));
  const dir = join(parent, "pglite");
  await copyPgliteTemplate(dir, "empty");
  return { dir, remove: () => rm(parent, { recursive: true, force: true }) };
}
