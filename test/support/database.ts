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
  url: string;
  drop(): Promise<void>;
}

/** Creates an empty database on the configured server; drop() removes it. */
export async function createFreshDatabase(adminUrl: string): Promise<FreshDatabase> {
  const name = `platform_test_${randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await c.unsafe(`drop database if exists ${name} with (force)`);
      } finally {
        await c.end({ timeout: 5 });
      }
    },
  };
}
