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

/**
 * The origin (scheme, host and port) every issuer matching `pattern` has,
 * or undefined when the pattern leaves any of them open. An issuer pattern
 * names the issuers the exchange may contact, so it must fix where they
 * are: the pattern starts with `http(s)://host[:port]` as literal text,
 * followed by `/` or by nothing more (docs/security.md, "What the exchange
 * checks"). RE2 works out the literal prefix every match starts with, so
 * `https://[a-z]+\.example\.com/.*`, `https://a+\.example\.com/` and
 * `https://x\.com/a|https://.*` are refused like `https://.*`. A leading `^`
 * changes nothing (matching is against the whole claim); `(?i)` leaves no
 * literal prefix and is refused.
 */
export function issuerPatternOrigin(pattern: string): string | undefined {
  let re: { prefix: unknown; prefixComplete: boolean };
  try {
    re = compileClaimPattern(pattern.startsWith("^") ? pattern.slice(1) : pattern).re2();
  } catch {
    return undefined;
  }
  if (typeof re.prefix !== "string") return undefined;
  const m = /^(https?):\/\/([^/?#\\]+)(\/|$)/.exec(re.prefix);
  if (!m) return undefined;
  // Without the slash the host could go on (`https://x\.com.*` matches https://x.com.evil.example).
  if (m[3] !== "/" && !re.prefixComplete) return undefined;
  let url: URL;
  try {
    url = new URL(`${m[1]}://${m[2]}`);
  } catch {
    return undefined;
  }
  if (!url.hostname || url.username || url.password) return undefined;
  return url.origin;
}
