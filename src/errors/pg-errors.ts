// How a database failure looks (SQLSTATE, unreachable): toConnectError maps these to statuses, and a
// service maps a constraint it expects to its own error. Here, not in src/db/, so that errors sit
// below every module (docs/architecture.md, "Layers").
//
// SQLSTATE codes surface differently from postgres.js and PGlite (and drizzle
// may wrap them in `cause`), so look through the chain for `code`.
function sqlState(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur && typeof cur === "object" && depth < 5; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

export function isUniqueViolation(e: unknown): boolean {
  return sqlState(e) === "23505";
}

/** A foreign key violation; with `table`, only one raised by a write to that table. */
export function isForeignKeyViolation(e: unknown, table?: string): boolean {
  return sqlState(e) === "23503" && (table === undefined || violationTable(e) === table);
}

// The table a constraint violation names: `table_name` from postgres.js, `table` from PGlite.
function violationTable(e: unknown): string | undefined {
  for (let cur: unknown = e, depth = 0; cur && typeof cur === "object" && depth < 5; depth++) {
    const c = cur as { table_name?: unknown; table?: unknown; cause?: unknown };
    const table = c.table_name ?? c.table;
    if (typeof table === "string") return table;
    cur = c.cause;
  }
  return undefined;
}

/** A transaction PostgreSQL gave up on so that another could go on (deadlock, serialization): retry it. */
export function isTransactionConflict(e: unknown): boolean {
  const state = sqlState(e);
  return state === "40P01" || state === "40001";
}

/**
 * A value PostgreSQL cannot take (class 22, data exception: a NUL byte, an
 * out-of-range number or time) or a limit it enforces (class 54, e.g. an
 * index row too large). Input checks should refuse these first; this is the
 * last line that keeps them from becoming INTERNAL.
 */
export function isDataError(e: unknown): boolean {
  const state = sqlState(e);
  return state !== undefined && (state.startsWith("22") || state.startsWith("54"));
}

// What a database that cannot be reached looks like from postgres.js (its
// own codes and the socket's) and from PostgreSQL itself (class 08,
// connection exception; 57P01-57P03, shutting down or starting; 53300, too
// many connections).
const UNREACHABLE_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01",
  "57P02",
  "57P03",
  "53300",
]);

/** The database could not be reached (refused, reset, timed out, shutting down): worth retrying, not a bug. */
export function isDatabaseUnavailable(e: unknown): boolean {
  for (let cur: unknown = e, depth = 0; cur && typeof cur === "object" && depth < 5; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === "string" && (UNREACHABLE_CODES.has(code) || code.startsWith("08"))) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}
