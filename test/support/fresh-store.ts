import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { openDatabase, type DatabaseHandle } from "../../src/db/index.js";
import { createFreshDatabase, postgresAdminUrl, type FreshDatabase } from "./database.js";
import { takePgliteStore, takePostgresDatabase } from "./store-pool.js";
import { copyPgliteTemplate } from "./store-templates.js";

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
 * A migrated store with no rows but the built-in roles, opened for a unit test on the back-end of
 * the run, from its worker's pool (store-pool.ts): a PGlite store, or a PostgreSQL database when
 * DATABASE_URL is set. `close` closes it and gives it back.
 */
export async function openMigratedStore(): Promise<{ handle: DatabaseHandle; close: () => Promise<void> }> {
  const pooledDatabase = postgresAdminUrl() ? await takePostgresDatabase() : undefined;
  const pooled = pooledDatabase ? undefined : await takePgliteStore();
  const handle = await openDatabase(
    pooledDatabase ? { pgliteDir: "memory://", databaseUrl: pooledDatabase.store } : { pgliteDir: "memory://", pglite: pooled!.store },
  );
  return {
    handle,
    close: async () => {
      await handle.close();
      pooled?.release();
      pooledDatabase?.release();
    },
  };
}

/**
 * openMigratedStore for one spec file: opens it before the file's own beforeAll hooks run (hooks
 * run in the order registered) and hands `use` its handle; closes it after the file's afterAll.
 */
export function migratedStorePerFile(use: (handle: DatabaseHandle) => void): void {
  let store: Awaited<ReturnType<typeof openMigratedStore>> | undefined;
  beforeAll(async () => {
    store = await openMigratedStore();
    use(store.handle);
  });
  afterAll(async () => {
    await store?.close();
  });
}

/**
 * A PGlite data directory holding a copy of a template (store-templates.ts): `empty`, initialized
 * only, or `migrated`. For specs about PGlite itself: opening it skips the initdb that a new
 * in-memory PGlite runs (a second of CPU), and with `migrated` the migrations too (another).
 * Without the global setup the directory is empty and PGlite initializes it. `remove` deletes it
 * (close the PGlite first).
 */
export async function pgliteDirFromTemplate(
  prefix: string,
  kind: "empty" | "migrated",
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const parent = await mkdtemp(join(tmpdir(), `${prefix}-`));
  const dir = join(parent, "pglite");
  await copyPgliteTemplate(dir, kind);
  return { dir, remove: () => rm(parent, { recursive: true, force: true }) };
}
