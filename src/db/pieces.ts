/** Items per statement where each item is a bind parameter: far below PostgreSQL's 65,535. */
export const BIND_PIECE = 500;

/** `items` in pieces of at most `size`, for statements that bind one parameter per item. */
export function inPieces<T>(items: readonly T[], size = BIND_PIECE): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
