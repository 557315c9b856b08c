import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import { createFreshDatabase, postgresAdminUrl, type FreshDatabase } from "./database.js";
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
