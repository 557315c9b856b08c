import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino, type Logger } from "pino";
import { loadConfig, type Config } from "../../src/server/config.js";
import { startApp, type App } from "../../src/server/app.js";
import { TestClock } from "./clock.js";
import { createFreshDatabase, postgresAdminUrl } from "./database.js";
import { takePgliteStore, takePostgresDatabase } from "./store-pool.js";
import { copyPgliteTemplate, postgresTemplate } from "./store-templates.js";

export interface TestServer {
  app: App;
  /** http://127.0.0.1:<port> */
  url: string;
  clock: TestClock;
  /** A valid admin API token. */
  token: string;
  backend: "pglite" | "postgres";
  /** A new admin token valid from the test clock's now (after advancing it past an hour). */
  renewToken(): Promise<string>;
  /**
   * Another replica on the same store (PostgreSQL only: PGlite has one process): same
   * database, data directory (so the same master key) and settings, its own port.
   */
  startReplica(env?: Record<string, string>): Promise<App>;
  stop(): Promise<void>;
}

/**
 * Starts the real server on a free loopback port with a store of its own, migrated and with no
 * rows: a PGlite or a PostgreSQL database (when DATABASE_URL is set) from its worker's pool
 * (store-pool.ts), which stop() gives back, or its own when it is the shared server or the test
 * names its data directory (PGlite) or database. stop() removes the directory; a database of its
 * own is left to the run's teardown (database.ts says why). Its log goes to `opts.logger`
 * (silent by default). `opts.storePrefix` starts the names of the directory
 * and the database, so that the global teardown can find them when nobody
 * calls stop() (test/support/shared-server.ts).
 */
export async function startTestServer(
  env: Record<string, string> = {},
  opts: { logger?: Logger; adminTokenCheckMs?: number; storePrefix?: string } = {},
): Promise<TestServer> {
  const dataDir = await mkdtemp(join(tmpdir(), opts.storePrefix ? `${opts.storePrefix}_` : "platform-test-"));
  const adminUrl = postgresAdminUrl();
  // The stores start migrated (test/support/store-templates.ts): the server's own migration run
  // then finds nothing to do, as on any restart.
  // A test that names its own database (a restart, a proxy in between) gets no other; the shared
  // server has one of its own; any other takes an emptied one from its worker's pool (store-pool.ts).
  const ownDatabase =
    adminUrl && env["DATABASE_URL"] === undefined && opts.storePrefix
      ? await createFreshDatabase(adminUrl, opts.storePrefix, postgresTemplate())
      : undefined;
  const pooledDatabase = adminUrl && env["DATABASE_URL"] === undefined && !opts.storePrefix ? await takePostgresDatabase() : undefined;
  const databaseUrl = ownDatabase?.url ?? pooledDatabase?.store;
  const clock = new TestClock();
  const settings = {
    PORT: "0",
    HOST: "127.0.0.1",
    PLATFORM_DATA_DIR: dataDir,
    PLATFORM_SHUTDOWN_TIMEOUT: "2500ms",
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...env,
  };
  // On PGlite a server whose store nobody else opens (no data directory from the test, not the
  // shared server) starts on a pooled store (store-pool.ts). A data directory the test gives
  // starts migrated as well, unless it already holds a store (a restart).
  const pooled =
    !settings.DATABASE_URL && env["PLATFORM_DATA_DIR"] === undefined && !opts.storePrefix ? await takePgliteStore() : undefined;
  const pgliteDir = join(settings.PLATFORM_DATA_DIR, "pglite");
  if (!pooled && !settings.DATABASE_URL && !existsSync(pgliteDir)) await copyPgliteTemplate(pgliteDir, "migrated");
  const config: Config = loadConfig(settings);
  const logger = opts.logger ?? pino({ level: "silent" });
  let app: App;
  try {
    app = await startApp(config, { logger, clock: clock.now, adminTokenCheckMs: opts.adminTokenCheckMs, pglite: pooled?.store });
  } catch (error) {
    // A failed start has closed what it had started (src/server/subsystems.ts), its connections
    // included, so its store goes back to the pool like a stopped server's.
    pooled?.release();
    pooledDatabase?.release();
    throw error;
  }
  const replicas: App[] = [];
  let stopped: Promise<void> | undefined;
  const server: TestServer = {
    app,
    url: `http://127.0.0.1:${app.port}`,
    clock,
    token: app.adminToken?.token ?? "",
    backend: settings.DATABASE_URL ? "postgres" : "pglite",
    async renewToken() {
      const sub = JSON.parse(Buffer.from(server.token.split(".")[1] ?? "", "base64url").toString()) as { sub: string };
      server.token = (await app.tokens.mint(sub.sub, app.urls.baseUrl)).token;
      return server.token;
    },
    async startReplica(extra = {}) {
      if (!settings.DATABASE_URL) throw new Error("replicas share a PostgreSQL database: set DATABASE_URL");
      // Replicas behind one address share its URLs: tokens one issues, the other accepts.
      const urls = { PLATFORM_BASE_URL: app.urls.baseUrl, PLATFORM_AUTH_URL: app.urls.authUrl };
      const replica = await startApp(loadConfig({ ...settings, ...urls, PLATFORM_BOOTSTRAP: "false", ...extra }), {
        logger,
        clock: clock.now,
      });
      replicas.push(replica);
      return replica;
    },
    stop() {
      // Once: a test may stop its server itself, and again in its cleanup.
      stopped ??= (async () => {
        for (const r of replicas.splice(0)) await r.close();
        await app.close();
        pooled?.release();
        pooledDatabase?.release();
        await ownDatabase?.drop();
        await rm(dataDir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
  return server;
}
