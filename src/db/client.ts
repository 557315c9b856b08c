import type { PGlite } from "@electric-sql/pglite";
import { sql, type SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { syncBuiltInRoles, type BuiltInRolesSync } from "./built-in-roles.js";
import type { LockHolder } from "./directory-lock.js";
import { MIGRATIONS_FOLDER } from "./migrations-folder.js";
import { type OpenedPglite, openPgliteDirectory } from "./pglite-store.js";
import { defaultTemplateDir } from "./pglite-template.js";
import type { PgliteThread } from "./pglite-thread.js";
import { preparingPostgres, StatementAdmission } from "./prepared-statements.js";
import { observedPglite, observedPostgres, type QueryObserver } from "./query-observer.js";
import * as schema from "./schema.js";

export type Schema = typeof schema;
export type Database = PgDatabase<PgQueryResultHKT, Schema>;
/** A transaction handle; anything that takes an Executor runs inside or outside one. */
export type Transaction = Parameters<Parameters<Database["transaction"]>[0]>[0];
export type Executor = Database | Transaction;

export interface DatabaseHandle {
  db: Database;
  kind: "pglite" | "postgres";
  /** What opening wrote to make the built-in roles equal the catalogue (docs/design.md, "Built-in roles"). */
  builtInRoles: BuiltInRolesSync;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /**
   * Subscribes to NOTIFY on `channel`. `onListening` runs each time the
   * subscription is (re)established, since notifications sent while it was
   * down are lost. Resolves to the unsubscribe function.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListening: () => void): Promise<() => Promise<void>>;
  /**
   * Tells a process that finds this store's data directory taken who holds it (its port, once
   * bound): directory-lock.ts. Does nothing on PostgreSQL or a PGlite given open.
   */
  describeHolder(info: Partial<LockHolder>): void;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** postgres://… for PostgreSQL; otherwise embedded PGlite. */
  databaseUrl?: string;
  /** PGlite data directory; `memory://` keeps everything in memory. */
  pgliteDir: string;
  /**
   * An open PGlite (in its thread) to use instead of opening `pgliteDir`; `close()` leaves it
   * open. It is migrated as any store. For a process that starts and stops applications many
   * times, as the test suite does: a PGlite start costs far more than an application's
   * (docs/design.md, "Storage"). Not with `databaseUrl`.
   */
  pglite?: PgliteThread;
  /**
   * The cluster a new `pgliteDir` is filled from before PGlite opens it (pglite-template.ts):
   * by default the one the build made (`dist/pglite-template`); null for none, PGlite's initdb.
   */
  pgliteTemplate?: string | null;
  /**
   * The store's directory, being opened already (openPgliteDirectory), by an entry point that
   * started it while it loaded the rest; the handle owns it as if it had opened it. Not with
   * `databaseUrl` or `pglite`.
   */
  pgliteOpening?: Promise<OpenedPglite>;
  /** Told of every query the application runs (not migrations): metrics. */
  observeQuery?: QueryObserver;
}

/** Connections to PostgreSQL per replica; PGlite has one. */
export const POSTGRES_POOL_SIZE = 10;

/**
 * Seconds postgres.js waits before reconnecting after `failures` failed attempts in a row.
 * A query waits out this delay, so its default (3^n / 100 s, up to 20 s) made API calls hang
 * for many seconds during an outage; capped at 2 s (the Retry-After UNAVAILABLE carries), a
 * call is answered, or served again once the database is back, within about two seconds, while
 * a replica's ten connections try at most ten times in one to two seconds, not flooding a
 * database that is starting up (docs/design.md, "Errors").
 */
export function reconnectDelaySeconds(failures: number): number {
  return Math.min(0.05 * 2 ** failures, 2) * (0.5 + Math.random() / 2);
}

// Serializes migrations when several replicas start at once against one PostgreSQL.
const MIGRATION_LOCK_ID = 7_201_304_981;

/**
 * Opens the database, applies pending migrations, writes the built-in roles from the catalogue
 * (here rather than in the caller, so nothing can read roles before they are written:
 * docs/design.md, "Built-in roles"), and returns a handle.
 */
export async function openDatabase(opts: DatabaseOptions): Promise<DatabaseHandle> {
  if (opts.databaseUrl && (opts.pglite || opts.pgliteOpening))
    throw new Error("openDatabase: a PGlite was given with a PostgreSQL URL; give one or the other");
  if (opts.databaseUrl) {
    const builtInRoles = await migratePostgresLocked(opts.databaseUrl);
    const client = postgres(opts.databaseUrl, { max: POSTGRES_POOL_SIZE, backoff: reconnectDelaySeconds, onnotice: () => {} });
    const preparing = preparingPostgres(client, new StatementAdmission());
    const db = drizzlePostgres(opts.observeQuery ? observedPostgres(preparing, opts.observeQuery) : preparing, {
      schema,
    }) as unknown as Database;
    return {
      db,
      kind: "postgres",
      builtInRoles,
      ping: async () => void (await client`select 1`),
      describeHolder: () => {},
      listen: async (channel, onNotify, onListening) => {
        const subscription = await client.listen(channel, onNotify, onListening);
        return () => subscription.unlisten();
      },
      // Called once requests have drained (or overrun the shutdown grace) and the background work
      // (dispatcher, event hub, retention) has finished, so nothing of ours should still query.
      // After an outage postgres.js keeps counting a broken connection as busy
      // (porsager/postgres#1097, #1130) and a graceful end waited out its whole timeout: the
      // connections are closed at once instead (docs/design.md, "Errors").
      close: () => client.end({ timeout: 0 }),
    };
  }
  // A new directory starts as a copy of the build's template (docs/design.md, "Storage").
  const template = opts.pgliteTemplate === undefined ? defaultTemplateDir() : (opts.pgliteTemplate ?? undefined);
  const { thread: client, lock } = opts.pglite
    ? { thread: opts.pglite, lock: undefined }
    : await (opts.pgliteOpening ?? openPgliteDirectory(opts.pgliteDir, template));
  let builtInRoles: BuiltInRolesSync;
  try {
    const migrator = drizzlePglite(asPglite(client), { schema });
    await migratePglite(migrator, { migrationsFolder: MIGRATIONS_FOLDER });
    builtInRoles = await syncBuiltInRoles(migrator);
    // The store is open: now the holder's name may go into its directory (directory-lock.ts).
    lock?.describe({});
  } catch (e) {
    if (!opts.pglite) {
      await client.close().catch(() => {});
      await lock?.release();
    }
    throw e;
  }
  const db = drizzlePglite(asPglite(opts.observeQuery ? observedPglite(client, opts.observeQuery) : client), {
    schema,
  }) as unknown as Database;
  const listening = new Set<() => Promise<void>>();
  return {
    db,
    kind: "pglite",
    builtInRoles,
    ping: async () => void (await client.query("select 1")),
    describeHolder: (info) => lock?.describe(info),
    // The thread sends a notification before the answer of the query that committed it, so it is
    // delivered before that query resolves, as in-process (pglite-host.ts).
    listen: async (channel, onNotify, onListening) => {
      const unlisten = await client.listen(channel, onNotify);
      listening.add(unlisten);
      onListening();
      return async () => {
        listening.delete(unlisten);
        await unlisten();
      };
    },
    close: async () => {
      if (!opts.pglite) {
        try {
          await client.close();
        } finally {
          await lock?.release();
        }
        return;
      }
      // A PGlite that stays open hears nothing more for this handle's listeners.
      for (const unlisten of [...listening]) await unlisten();
      listening.clear();
    },
  };
}

// The built-in roles are written under the migration lock too, so replicas starting together
// do not race on them.
async function migratePostgresLocked(url: string): Promise<BuiltInRolesSync> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const db = drizzlePostgres(client);
    await db.execute(sql`select pg_advisory_lock(${MIGRATION_LOCK_ID})`);
    try {
      await migratePostgres(db, { migrationsFolder: MIGRATIONS_FOLDER });
      return await syncBuiltInRoles(db);
    } finally {
      await db.execute(sql`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`);
    }
  } finally {
    await client.end({ timeout: 5 });
  }
}

/** Drizzle's PGlite driver takes a PGlite; it calls only what PgliteThread has (query, transaction). */
const asPglite = (client: PgliteThread): PGlite => client as unknown as PGlite;

/** Runs raw SQL and returns its rows on either driver (postgres.js returns an array, PGlite `{rows}`). */
export async function queryRows<Row extends Record<string, unknown>>(db: Executor, query: SQL): Promise<Row[]> {
  return rowsOf<Row>(await db.execute(query));
}

/** The rows of a driver's result: postgres.js answers an array, PGlite an object holding `rows`. */
export function rowsOf<Row extends Record<string, unknown>>(result: unknown): Row[] {
  if (Array.isArray(result)) return result as Row[];
  return ((result as { rows?: Row[] }).rows ?? []) as Row[];
}
