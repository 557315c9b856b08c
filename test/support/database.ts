import { randomBytes } from "node:crypto";
import postgres from "postgres";

/**
 * The PostgreSQL server the suite runs against, when one is configured
 * (DATABASE_URL); otherwise undefined and the suite uses embedded PGlite.
 */
export function postgresAdminUrl(): string | undefined {
  return process.env["DATABASE_URL"] || undefined;
}

/**
 * Names this run's stores and databases (set by the global setup, shared-server-setup.ts, whose
 * teardown removes whatever carries it).
 */
export const SHARED_STORE_PREFIX_VARIABLE = "PLATFORM_TEST_SHARED_STORE_PREFIX";

export interface FreshDatabase {
  name: string;
  url: string;
  /**
   * Drops the database (once; later calls do nothing), even while a server still holds
   * connections; or, for a database of this run on the configured server, leaves it to the
   * run's teardown.
   */
  drop(): Promise<void>;
}

/**
 * Creates a database `<prefix>_<random>` on `adminUrl`'s server; drop() removes it. It is empty,
 * or a copy of `template` (a database nobody is connected to). The prefix is the run's by
 * default, so the global teardown finds the database even when nobody drops it.
 *
 * On the configured server (DATABASE_URL) drop() only forgets the database: PostgreSQL answers
 * every DROP DATABASE with an immediate checkpoint of the whole server, which the dropping test
 * waits for, and a run made about fifty of them while the other worker's databases were busy.
 * The teardown drops them all at the end, side by side, when the checkpoints have little to
 * write. (Paired runs of the whole suite showed no difference in wall time beyond the noise.)
 */
export async function createFreshDatabase(adminUrl: string, prefix?: string, template?: string): Promise<FreshDatabase> {
  const runPrefix = process.env[SHARED_STORE_PREFIX_VARIABLE];
  const name = `${prefix ?? runPrefix ?? "platform_test"}_${randomBytes(6).toString("hex")}`;
  const leftToTeardown = runPrefix !== undefined && name.startsWith(`${runPrefix}_`) && adminUrl === postgresAdminUrl();
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(template ? `create database ${name} template ${template}` : `create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  let dropped = false;
  return {
    name,
    url: url.toString(),
    async drop() {
      if (dropped) return;
      dropped = true;
      if (leftToTeardown) return;
      const c = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await c.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end({ timeout: 5 });
      }
    },
  };
}
