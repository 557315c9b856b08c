import { LRUCache } from "lru-cache";
import { RE2JS } from "re2js";

/**
 * claimMatch patterns run on RE2 (re2js), whose matching time is linear in
 * the input: a pattern such as `(a+)+` cannot stall the event loop the way
 * a backtracking RegExp does (docs/security.md, "What the exchange checks").
 */

/** Claims longer than this never match a pattern (and are not scanned). */
const MAX_MATCHED_CLAIM_LENGTH = 2048;
const COMPILED_CACHE_SIZE = 1000;

const compiled = new LRUCache<string, RE2JS>({ max: COMPILED_CACHE_SIZE });

export class ClaimPatternError extends Error {}

/** Compiles `pattern` (RE2 syntax); throws ClaimPatternError with RE2's reason when it cannot. */
export function compileClaimPattern(pattern: string): RE2JS {
  const cached = compiled.get(pattern);
  if (cached) return cached;
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (e) {
    throw new ClaimPatternError(e instanceof Error ? e.message : String(e));
  }
  compiled.set(pattern, re);
  return re;
}

/** True when the whole of `value` matches `pattern`; false for an over-long value or a pattern that does not compile. */
export function matchesClaimPattern(pattern: string, value: string): boolean {
  if (value.length > MAX_MATCHED_CLAIM_LENGTH) return false;
  try {
    return compileClaimPattern(pattern).matches(value);
  } catch {
    return false;
  }
}
