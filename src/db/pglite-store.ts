// Opening an embedded store's directory: the lock, then PGlite in its thread. Apart from the rest
// of the database module (Drizzle, migrations) so that the server's entry point can start it while
// it loads its own modules (docs/design.md, "Storage").
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type DirectoryLock, lockDirectory } from "./directory-lock.js";
import { PgliteThread } from "./pglite-thread.js";

/** Where a server keeps PGlite's files: `pglite` in its data directory. */
export const pgliteDirIn = (dataDir: string): string => join(dataDir, "pglite");

/** A store's PGlite, open in its thread, and the lock on its directory (none in memory). */
export interface OpenedPglite {
  thread: PgliteThread;
  lock: DirectoryLock | undefined;
}

/**
 * Locks `dir` and opens PGlite on it (filling a new directory from `template` first); `memory://`
 * opens a store in memory, with no lock. Nothing stays locked when it fails.
 */
export async function openPgliteDirectory(dir: string, template: string | undefined): Promise<OpenedPglite> {
  if (dir.startsWith("memory://")) return { thread: await PgliteThread.open(dir), lock: undefined };
  mkdirSync(dir, { recursive: true });
  // One process per data directory: PGlite does not lock it, and a second one would each see only
  // its own writes and lose the other's (docs/design.md, "Storage").
  const lock = await lockDirectory(dir);
  try {
    // Off the event loop: docs/design.md, "Storage". The thread cuts PGlite's parsers down (pglite-parsers.ts).
    return { thread: await PgliteThread.open(dir, template), lock };
  } catch (e) {
    await lock.release();
    throw e;
  }
}
