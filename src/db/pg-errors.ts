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

export function isForeignKeyViolation(e: unknown): boolean {
  return sqlState(e) === "23503";
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
