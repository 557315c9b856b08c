import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { PgliteThread } from "../../src/db/pglite-thread.js";
import { createFreshDatabase, postgresAdminUrl, SHARED_STORE_PREFIX_VARIABLE } from "./database.js";
import { copyPgliteTemplate, postgresTemplate } from "./store-templates.js";

// Stores that test servers and unit tests hand back when they are done with them, so that the
// next one of the same worker starts on one of them, emptied, instead of on a new one:
// - a PGlite start cost about 0.7 core-seconds in the suite (its own start, the JIT compiling its
//   glue again for the new instance, and full garbage collections of the worker's heap that its
//   180 MB of memory set off);
// - a PostgreSQL database copied from the migrated template cost 0.25–0.35 core-seconds of the
//   server's (CREATE DATABASE writes every block of the copy to the WAL), a run made about forty,
//   and emptying one costs about a fifth of that (0.04–0.08).
// Emptied, a store is as a fresh one: every table of the application truncated, identities
// restarted; the server's start (or openDatabase) then writes the built-in roles again, as on any
// start. The schema is not touched: no test changes it.
//
// Kept on globalThis, as the shared server is (shared-server.ts), so that a file that resets the
// module registry does not lose them. Nobody closes the PGlites: each runs in a thread of its own
// (src/db/pglite-thread.ts) that keeps no process alive while idle and ends with the worker, and
// the global setup removes their directories with the run's scratch directory; the databases are
// the run's, dropped by the global teardown with the others (database.ts).

const PGLITE_POOL = Symbol.for("platform-api.test.pglite-pool");
const POSTGRES_POOL = Symbol.for("platform-api.test.postgres-pool");
const slot = globalThis as { [PGLITE_POOL]?: PgliteThread[]; [POSTGRES_POOL]?: string[] };

/** Every table of the application's schema, for one TRUNCATE. */
const TABLES = "select string_agg(format('%I.%I', schemaname, tablename), ', ') as tables from pg_tables where schemaname = 'public'";
/** Empties them all in one statement (foreign keys included), sequences back to their start. */
const truncate = (tables: string) => `truncate ${tables} restart identity cascade`;

/** A store lent to one server or test: `release` gives it back once nothing uses it any more. */
export interface Lent<T> {
  store: T;
  release: () => void;
}

function lend<T>(store: T, idle: T[]): Lent<T> {
  let released = false;
  return {
    store,
    release: () => {
      if (released) return;
      released = true;
      idle.push(store);
    },
  };
}

/**
 * A migrated PGlite store with no rows, for one server: one another server of this worker gave
 * back, emptied, or a new copy of the migrated template.
 */
export async function takePgliteStore(): Promise<Lent<PgliteThread>> {
  const idle = (slot[PGLITE_POOL] ??= []);
  let pglite = idle.pop();
  if (!pglite) {
    const dir = join(await mkdtemp(join(tmpdir(), "platform-pooled-")), "pglite");
    await copyPgliteTemplate(dir, "migrated");
    pglite = await PgliteThread.open(dir);
  }
  // A new copy too, so that every store handed out is alike: the template holds the built-in roles.
  const { rows } = await pglite.query<{ tables: string | null }>(TABLES);
  if (rows[0]?.tables) await pglite.exec(truncate(rows[0].tables));
  return lend(pglite, idle);
}

/**
 * The URL of a migrated database on the configured PostgreSQL server (DATABASE_URL) with no rows,
 * for one server or test: one that another of this worker gave back, emptied, or a new copy of
 * the migrated template (without the global setup, an empty database that whoever opens it
 * migrates). Give it back only once every connection to it has ended: one still in a
 * transaction would hold the TRUNCATE up. Without the global setup nothing drops the run's
 * databases at its end, so `release` drops this one instead of keeping it.
 */
export async function takePostgresDatabase(): Promise<Lent<string>> {
  const adminUrl = postgresAdminUrl();
  if (!adminUrl) throw new Error("no PostgreSQL server configured (DATABASE_URL)");
  const idle = (slot[POSTGRES_POOL] ??= []);
  let url = idle.pop();
  if (!url) {
    const fresh = await createFreshDatabase(adminUrl, undefined, postgresTemplate());
    if (!process.env[SHARED_STORE_PREFIX_VARIABLE]) return { store: fresh.url, release: () => void fresh.drop().catch(() => {}) };
    url = fresh.url;
  }
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql.unsafe<{ tables: string | null }[]>(TABLES);
    if (row?.tables) await sql.unsafe(truncate(row.tables));
  } finally {
    await sql.end({ timeout: 5 });
  }
  return lend(url, idle);
}
