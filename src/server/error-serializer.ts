/**
 * Logs take errors through this serializer (pino's `err`), which keeps what
 * helps an operator and nothing a query carried: drizzle's DrizzleQueryError
 * holds the query's parameters (`params`, and a `params:` line in its
 * message and stack), postgres.js and PGlite errors hold them too
 * (`parameters`, `params`), and `detail`, `where` or `hint` quote row values.
 * Those parameters are secrets, token claims and personal data.
 *
 * Kept: the error's class, message (without `params:` lines; for database
 * errors, quoted values replaced), stack frames, the query text (SQL with
 * placeholders, no values), codes (SQLSTATE, errno, gRPC) and names of the
 * schema objects involved; causes likewise. Everything else is dropped.
 */

export interface SerializedError {
  type: string;
  message: string;
  stack?: string;
  query?: string;
  cause?: SerializedError;
  errors?: SerializedError[];
  [field: string]: unknown;
}

const MAX_DEPTH = 5;
const SQLSTATE = /^[0-9A-Z]{5}$/;
const FRAME = /^\s+at /;
// Identifiers and codes only: these never hold a row's values.
const SAFE_FIELDS = [
  "code",
  "errno",
  "syscall",
  "status",
  "severity",
  "routine",
  "schema",
  "table",
  "column",
  "constraint",
  "dataType",
  "schema_name",
  "table_name",
  "column_name",
  "constraint_name",
  "data_type",
] as const;

export function serializeError(err: unknown): SerializedError {
  return serialize(err, 0);
}

function serialize(err: unknown, depth: number): SerializedError {
  if (typeof err !== "object" || err === null) return { type: typeof err, message: withoutParams(String(err)) };
  const e = err as Record<string, unknown>;
  const type = typeof err.constructor === "function" && err.constructor.name ? err.constructor.name : "Object";
  const code = e["code"];
  const database = typeof code === "string" && SQLSTATE.test(code);
  let message = withoutParams(typeof e["message"] === "string" ? e["message"] : "");
  // PostgreSQL quotes the offending value in messages (`invalid input syntax for type integer: "…"`);
  // the object names it would also quote are kept in their own fields.
  if (database) message = message.replace(/"(?:[^"]|"")*"/g, '"…"');
  const out: SerializedError = { type, message };
  if (typeof e["stack"] === "string") {
    // Only the frames: the stack's first lines repeat the message, params and all.
    const name = typeof e["name"] === "string" ? e["name"] : type;
    out.stack = [`${name}: ${message}`, ...e["stack"].split("\n").filter((line) => FRAME.test(line))].join("\n");
  }
  // drizzle and the drivers keep the SQL text (placeholders only) in `query`.
  if (typeof e["query"] === "string") out.query = e["query"];
  for (const field of SAFE_FIELDS) {
    const value = e[field];
    if (typeof value === "string" || typeof value === "number") out[field] = value;
  }
  if (depth < MAX_DEPTH) {
    if (e["cause"] !== undefined) out.cause = serialize(e["cause"], depth + 1);
    if (Array.isArray(e["errors"])) out.errors = e["errors"].map((inner: unknown) => serialize(inner, depth + 1));
  }
  return out;
}

/** The text before its first `params:` line: parameters may span lines, so everything after goes too. */
function withoutParams(text: string): string {
  const lines = text.split("\n");
  const at = lines.findIndex((line) => line.trimStart().startsWith("params:"));
  return at < 0 ? text : lines.slice(0, at).join("\n");
}
