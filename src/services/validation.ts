import { MAX_NAME_LENGTH } from "../db/index.js";
import { compileClaimPattern } from "./iam/claim-pattern.js";
import { invalidArgument, required } from "../errors/index.js";

// Field checks shared by resource mappings; each throws INVALID_ARGUMENT
// naming the field.

export { MAX_NAME_LENGTH };
export const MAX_DESCRIPTION_LENGTH = 4096;
/** Byte caps beside the character caps (docs/security.md, "Input"): what a row costs to store and render. */
export const MAX_NAME_BYTES = 512;
export const MAX_DESCRIPTION_BYTES = 8192;

/** At most `max` characters. */
export function checkLength(value: string, field: string, max: number): void {
  if (value.length > max) throw invalidArgument(field, `must be at most ${max} characters`);
}

// C0 and C1 control characters (Unicode category Cc); descriptions may hold
// line feeds, carriage returns and tabs (multi-line text), names none of them.
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
const CONTROL_BUT_LINES = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

/** No control characters; `lines` lets line feeds, carriage returns and tabs through. */
export function checkNoControl(value: string, field: string, lines = false): void {
  if ((lines ? CONTROL_BUT_LINES : CONTROL).test(value)) {
    throw invalidArgument(
      field,
      lines ? "must not contain control characters other than line breaks and tabs" : "must not contain control characters",
    );
  }
}

/** A display name without the required check: at most 200 characters and 512 bytes, no control characters. */
export function checkOptionalName(name: string, field = "name"): void {
  checkLength(name, field, MAX_NAME_LENGTH);
  checkByteLength(name, field, MAX_NAME_BYTES);
  checkNoControl(name, field);
}

/** A required display name: non-empty, at most 200 characters and 512 bytes, no control characters. */
export function checkName(name: string, field = "name"): void {
  if (!name) throw required(field);
  checkOptionalName(name, field);
}

/** An optional free-text description: at most 4096 characters and 8192 bytes; line breaks and tabs but no other control characters. */
export function checkDescription(description: string, field = "description"): void {
  checkLength(description, field, MAX_DESCRIPTION_LENGTH);
  checkByteLength(description, field, MAX_DESCRIPTION_BYTES);
  checkNoControl(description, field, true);
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
