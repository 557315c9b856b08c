import { cp, mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { openDatabase } from "../../src/db/client.js";

// Stores copied from templates the global setup makes once per run, instead of made from
// nothing for every test server: a new PGlite directory cost 1.6 s here (initdb, then the
// migrations), a copy of the template tens of milliseconds; on PostgreSQL, CREATE DATABASE …
// TEMPLATE skips the migrations. Without the global setup (a single file run by hand with another config) there is
// no template and stores are made from nothing, as before.

const PGLITE_MIGRATED = "PLATFORM_TEST_PGLITE_TEMPLATE";
const PGLITE_EMPTY = "PLATFORM_TEST_PGLITE_EMPTY_TEMPLATE";
const POSTGRES_MIGRATED = "PLATFORM_TEST_POSTGRES_TEMPLATE";

/**
 * Makes the templates, named with `prefix` so that the global teardown removes them with the
 * shared stores: a migrated PostgreSQL database when `adminUrl` is given (the run is on
 * PostgreSQL, and the few PGlite stores it still starts are made from nothing); otherwise a
 * migrated PGlite directory (with the built-in roles) and an initialized but empty one.
 */
export async function makeStoreTemplates(prefix: string, adminUrl: string | undefined): Promise<void> {
  if (adminUrl) return makePostgresTemplate(prefix, adminUrl);
  const root = join(tmpdir(), `${prefix}_templates`);
  const migrated = join(root, "migrated");
  const empty = join(root, "empty");
  await mkdir(root, { recursive: true });
  const initialized = new PGlite(empty);
  await initialized.waitReady;
  // PGlite works in template1; initdb's two other databases are never opened, and without them
  // a copy is about a third of the files and a twentieth of the time (40 ms against 0.2–1 s).
  // One statement at a time: DROP DATABASE cannot run in the transaction a multi-statement exec is.
  for (const statement of ["alter database template0 is_template false", "drop database template0", "drop database postgres", "checkpoint"]) {
    await initialized.exec(statement);
  }
  await initialized.close();
  await cp(empty, migrated, { recursive: true });
  await (await openDatabase({ pgliteDir: migrated })).close();
  process.env[PGLITE_EMPTY] = empty;
  process.env[PGLITE_MIGRATED] = migrated;
}

async function makePostgresTemplate(prefix: string, adminUrl: string): Promise<void> {
  const name = `${prefix}_template`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
    await (await openDatabase({ databaseUrl: url.toString(), pgliteDir: "memory://" })).close();
    // CREATE DATABASE … TEMPLATE refuses a template in use: nobody may connect to it from now on.
    await admin.unsafe(`alter database ${name} with allow_connections false`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  process.env[POSTGRES_MIGRATED] = name;
}

/**
 * Fills `dir` (which must not exist yet) with a copy of a PGlite template: `migrated` holds the
 * schema and the built-in roles, `empty` only an initialized cluster. Does nothing without one.
 */
export async function copyPgliteTemplate(dir: string, kind: "migrated" | "empty"): Promise<void> {
  const template = process.env[kind === "migrated" ? PGLITE_MIGRATED : PGLITE_EMPTY];
  if (template) await cp(template, dir, { recursive: true });
}

/** The migrated PostgreSQL database to copy new test databases from, if the global setup made one. */
export function postgresTemplate(): string | undefined {
  return process.env[POSTGRES_MIGRATED] || undefined;
}
