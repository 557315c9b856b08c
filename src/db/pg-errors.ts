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
