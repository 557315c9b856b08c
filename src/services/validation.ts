import { compileClaimPattern } from "../auth/claim-pattern.js";
import { invalidArgument } from "../errors/index.js";

// Field checks shared by resource mappings; each throws INVALID_ARGUMENT
// naming the field.

export const MAX_NAME_LENGTH = 200;
export const MAX_DESCRIPTION_LENGTH = 4096;

/** At most `max` characters. */
export function checkLength(value: string, field: string, max: number): void {
  if (value.length > max) throw invalidArgument(field, `must be at most ${max} characters`);
}

/** A required display name: non-empty, at most 200 characters. */
export function checkName(name: string, field = "name"): void {
  if (!name) throw invalidArgument(field, "is required");
  checkLength(name, field, MAX_NAME_LENGTH);
}

/** An optional free-text description: at most 4096 characters. */
export function checkDescription(description: string, field = "description"): void {
  checkLength(description, field, MAX_DESCRIPTION_LENGTH);
}

/**
 * At most `max` bytes of UTF-8: for values kept in an index, whose entries
 * PostgreSQL limits to about 2,700 bytes (a character can take four).
 */
export function checkByteLength(value: string, field: string, max: number): void {
  if (Buffer.byteLength(value, "utf8") > max) throw invalidArgument(field, `must be at most ${max} bytes in UTF-8`);
}

/**
 * A claimMatch pattern: RE2 syntax (linear-time matching), matched against
 * the whole claim; one the engine cannot compile is refused here, naming
 * the field, rather than failing every exchange later.
 */
export function checkPattern(pattern: string, field: string, max: number): void {
  checkLength(pattern, field, max);
  try {
    compileClaimPattern(pattern);
  } catch (e) {
    throw invalidArgument(field, `is not a valid RE2 regular expression: ${e instanceof Error ? e.message : String(e)}`);
  }
}
