// Vitest global setup for test/support/shared-server.ts and the store templates
// (store-templates.ts). The shared servers live until their worker ends and
// nobody calls their stop(), so this names their stores, and the templates, with
// a prefix of this run's own (other runs may share the PostgreSQL server) and
// removes whatever carries it once the run is over.
import { randomBytes } from "node:crypto";
import { readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { postgresAdminUrl } from "./database.js";
import { makeStoreTemplates } from "./store-templates.js";

export const SHARED_STORE_PREFIX_VARIABLE = "PLATFORM_TEST_SHARED_STORE_PREFIX";

export default async function setup(): Promise<() => Promise<void>> {
  // A database name as well as a directory name: lower case, digits and underscores.
  const prefix = `platform_shared_${randomBytes(5).toString("hex")}`;
  process.env[SHARED_STORE_PREFIX_VARIABLE] = prefix;
  const teardown = async (): Promise<void> => {
    const dirs = (await readdir(tmpdir())).filter((name) => name.startsWith(`${prefix}_`));
    await Promise.all(dirs.map((name) => rm(join(tmpdir(), name), { recursive: true, force: true })));
    const adminUrl = postgresAdminUrl();
    if (!adminUrl) return;
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    try {
      const rows = await admin<{ datname: string }[]>`select datname from pg_database`;
      for (const { datname } of rows.filter((r) => r.datname.startsWith(`${prefix}_`))) {
        await admin.unsafe(`drop database if exists ${datname} with (force)`);
      }
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
