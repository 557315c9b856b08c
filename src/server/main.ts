import { existsSync } from "node:fs";
import { ensurePrivateDir } from "../crypto/private-dir.js";
import { DirectoryInUseError } from "../db/directory-lock.js";
import { openPgliteDirectory, pgliteDirIn } from "../db/pglite-store.js";
import { defaultTemplateDir } from "../db/pglite-template.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { serializeError, type SerializedError } from "./error-serializer.js";
import { createLogger, stdoutDestination } from "./logger.js";

const PARENT_CHECK_MS = 1000;
/** Log lines are written in batches (one per request adds up); none waits longer than this. */
const LOG_FLUSH_MS = 500;

/**
 * Settings from a `.env` file in the working directory (or PLATFORM_ENV_FILE),
 * when there is one; variables already in the environment win.
 */
function loadDotEnv(path: string): void {
  if (!existsSync(path)) return;
  try {
    process.loadEnvFile(path);
  } catch (e) {
    throw new ConfigError(`${path} could not be read: ${e instanceof Error ? e.message : String(e)}`);
  }
}

async function main(): Promise<void> {
  let config: Config;
  try {
    loadDotEnv(process.env["PLATFORM_ENV_FILE"] ?? ".env");
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`configuration error: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  // A log destination that fails (the reader of a pipe gone) or stays full (a reader that stopped
  // reading) drops lines, counted in /metrics, and never blocks or stops the server
  // (docs/security.md, "Shutdown and logging").
  const destination = stdoutDestination();
  const logger = createLogger(config.logLevel, destination);
  setInterval(() => destination.flush(), LOG_FLUSH_MS).unref();
  // The embedded store opens in its thread (PGlite's WASM, a new directory's copy of the template)
  // while this one loads the rest of the server, about a second of each (docs/design.md, "Storage").
  // Its failure (a directory in use) is reported by startApp, which takes it over.
  const pgliteOpening = config.databaseUrl ? undefined : openEarly(config.dataDir);
  pgliteOpening?.catch(() => {});
  const { startApp } = await import("./app.js");
  const app = await startApp(config, { logger, logLinesDropped: () => destination.dropped, pgliteOpening });
  // Whoever waits for the startup lines (the port, the admin token path) sees them now.
  destination.flush();
  const exit = (code: number) => {
    // One attempt: what a full pipe does not take now is lost, rather than hold the exit.
    destination.flush();
    process.exit(code);
  };
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      // A second signal: whoever sent it will not wait for the drain.
      logger.warn({ signal }, "second signal: exiting without finishing the shutdown");
      exit(1);
    }
    stopping = true;
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, "draining in-flight requests");
    // The deadline of the whole shutdown: whatever still holds it (a request past its drain, a
    // store that does not close) does not keep the process beyond it.
    setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, "shutdown did not finish within PLATFORM_SHUTDOWN_TIMEOUT; exiting");
      exit(1);
    }, config.shutdownTimeoutMs);
    app.close().then(
      (drained) => {
        if (!drained) logger.warn("requests still in flight at the drain deadline were cut off");
        exit(drained ? 0 : 1);
      },
      (e: unknown) => {
        logger.error({ err: e }, "shutdown failed");
        exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  // Started by a process that is then killed outright (`kill -9` of `npm start`): the server
  // is reparented, and stops too rather than hold the port as an orphan.
  const parent = process.ppid;
  setInterval(() => {
    // Once: a second stop() is a second signal, which exits without draining.
    if (process.ppid !== parent && !stopping) stop("parent exited");
  }, PARENT_CHECK_MS).unref();
}

async function openEarly(dataDir: string): ReturnType<typeof openPgliteDirectory> {
  // Made private before anything is put in it, as startApp would.
  await ensurePrivateDir(dataDir);
  return openPgliteDirectory(pgliteDirIn(dataDir), defaultTemplateDir());
}

main().catch((e: unknown) => {
  // Not a fault to debug: the message says what to do.
  if (e instanceof DirectoryInUseError) {
    process.stderr.write(`failed to start: ${e.message}\n`);
    process.exit(1);
  }
  // Through the log serializer: a failed query at start carries its parameters too.
  const lines: string[] = [];
  for (let cur: SerializedError | undefined = serializeError(e); cur; cur = cur.cause)
    lines.push(cur.stack ?? `${cur.type}: ${cur.message}`);
  process.stderr.write(`failed to start: ${lines.join("\ncaused by: ")}\n`);
  process.exit(1);
});
