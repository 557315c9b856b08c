import { invalidArgument } from "../../errors/index.js";

// The OCI distribution spec's grammar for repository names and tags.
const REPO_NAME = "^[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*)*$";
const TAG_NAME = "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$";
const DIGEST = "^sha256:[0-9a-f]{64}$";
const REPO_NAME_PATTERN = new RegExp(REPO_NAME);
const TAG_NAME_PATTERN = new RegExp(TAG_NAME);
const DIGEST_PATTERN = new RegExp(DIGEST);

export const MAX_REPO_NAME_LENGTH = 255;

/** A repository name (or alias) in `field`; INVALID_ARGUMENT stating the pattern otherwise. */
export function checkRepoName(field: string, value: string): void {
  if (!REPO_NAME_PATTERN.test(value)) throw invalidArgument(field, `must match the pattern ${REPO_NAME}`);
  if (value.length > MAX_REPO_NAME_LENGTH) throw invalidArgument(field, `must be at most ${MAX_REPO_NAME_LENGTH} characters`);
}

export function checkTagName(field: string, value: string): void {
  if (!TAG_NAME_PATTERN.test(value)) throw invalidArgument(field, `must match the pattern ${TAG_NAME}`);
}

export function checkDigest(field: string, value: string): void {
  if (!DIGEST_PATTERN.test(value)) throw invalidArgument(field, "must be sha256: followed by 64 lower-case hex characters");
}
