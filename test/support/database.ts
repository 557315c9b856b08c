import { randomBytes } from "node:crypto";
import postgres from "postgres";

/**
 * The PostgreSQL server the suite runs against, when one is configured
 * (DATABASE_URL); otherwise undefined and the suite uses embedded PGlite.
 */
export function postgresAdminUrl(): string | undefined {
  return process.env["DATABASE_URL"] || undefined;
}

export interface FreshDatabase {
  name: string;
  url: string;
  /** Drops the database (once; later calls do nothing), even while a server still holds connections. */
  drop(): Promise<void>;
}

/**
 * Creates a database `<prefix>_<random>` on the configured server; drop() removes it. It is
 * empty, or a copy of `template` (a database nobody is connected to).
 */
export async function createFreshDatabase(adminUrl: string, prefix = "platform_test", template?: string): Promise<FreshDatabase> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
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
      const c = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await c.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end({ timeout: 5 });
      }
    },
  };
}
