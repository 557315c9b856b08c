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
 * A regular expression that must compile in JavaScript, alone and anchored
 * as `^(?:…)$` the way it is matched: compiling it alone refuses input such
 * as `a)|(b` that would otherwise escape the anchors.
 */
export function checkPattern(pattern: string, field: string, max: number): void {
  checkLength(pattern, field, max);
  try {
    new RegExp(pattern, "u");
    new RegExp(`^(?:${pattern})$`, "u");
  } catch (e) {
    throw invalidArgument(field, `is not a valid regular expression: ${e instanceof Error ? e.message : String(e)}`);
  }
}
