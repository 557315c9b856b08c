import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { copyPgliteTemplate } from "./store-templates.js";

// Open PGlite stores that test servers hand back when they stop, so that the next server of the
// same worker starts on one of them, emptied, instead of starting a PGlite of its own. A PGlite
// start cost about 0.7 core-seconds in the suite: its own start, the JIT compiling its glue again
// for the new instance, and full garbage collections of the worker's heap that its 180 MB of
// memory set off. Emptied, a store is as a fresh one: every table truncated, identities
// restarted; the server's start then writes the built-in roles again, as on any start.
//
// Kept on globalThis, as the shared server is (shared-server.ts), so that a file that resets the
// module registry does not lose them. Nobody closes them: the worker's end does, and the global
// setup removes their directories with the run's scratch directory.

const POOL = Symbol.for("platform-api.test.pglite-pool");
const slot = globalThis as { [POOL]?: PGlite[] };

/** Every table of the application, emptied in one statement (foreign keys included). */
async function empty(pglite: PGlite): Promise<void> {
  const { rows } = await pglite.query<{ tables: string | null }>(
    "select string_agg(format('%I.%I', schemaname, tablename), ', ') as tables from pg_tables where schemaname = 'public'",
  );
  if (rows[0]?.tables) await pglite.exec(`truncate ${rows[0].tables} restart identity cascade`);
}

/**
 * A migrated PGlite store with no rows, for one server: one another server of this worker gave
 * back, emptied, or a new copy of the migrated template. `release` gives it back (after the
 * server has stopped using it).
 */
export async function takePgliteStore(): Promise<{ pglite: PGlite; release: () => void }> {
  const idle = (slot[POOL] ??= []);
  let pglite = idle.pop();
  if (!pglite) {
    const dir = join(await mkdtemp(join(tmpdir(), "platform-pooled-")), "pglite");
    await copyPgliteTemplate(dir, "migrated");
    pglite = new PGlite(dir);
    await pglite.waitReady;
  }
  // A new copy too, so that every store handed out is alike: the template holds the built-in roles.
  await empty(pglite);
  const taken = pglite;
  let released = false;
  return {
    pglite: taken,
    release: () => {
      if (released) return;
      released = true;
      idle.push(taken);
    },
  };
}
