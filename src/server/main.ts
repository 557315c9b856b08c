import { pino } from "pino";
import { ConfigError, loadConfig } from "./config.js";
import { startApp } from "./app.js";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`configuration error: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = pino({ level: config.logLevel });
  const app = await startApp(config, { logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "draining in-flight requests");
    app.close().then(
      () => process.exit(0),
      (e: unknown) => {
        logger.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((e: unknown) => {
  process.stderr.write(`failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
