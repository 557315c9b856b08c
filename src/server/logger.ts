import { pino, type DestinationStream, type Logger } from "pino";
import { serializeError } from "./error-serializer.js";

/**
 * Paths pino censors wherever they appear at these depths: nothing logs
 * them today, and a future `log.info({ req })` or `{ headers }` must not
 * leak a bearer token either.
 */
const REDACT_PATHS = [
  "authorization",
  "headers.authorization",
  "*.authorization",
  "*.headers.authorization",
  "cookie",
  "headers.cookie",
  "*.headers.cookie",
  "token",
  "*.token",
  "clientSecret",
  "*.clientSecret",
];

/** The server's logger: errors through serializeError (no query parameters), credentials censored. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { level, serializers: { err: serializeError }, redact: { paths: REDACT_PATHS, censor: "[redacted]" } };
  return destination ? pino(options, destination) : pino(options);
}
