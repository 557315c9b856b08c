import { chmod, mkdir, stat } from "node:fs/promises";

/**
 * Creates `dir` (and missing parents) readable by this user only, and
 * tightens an existing one to 0700: it holds the database, the master key
 * and admin tokens.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // Only when needed: chmod fails on a directory owned by someone else even when nothing changes.
  if (((await stat(dir)).mode & 0o777) !== 0o700) await chmod(dir, 0o700);
}
