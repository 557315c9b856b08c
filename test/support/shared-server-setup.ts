// Vitest global setup for test/support/shared-server.ts and the store templates
// (store-templates.ts). The shared servers live until their worker ends and
// nobody calls their stop(), so this names their stores, and the PostgreSQL template, with
// a prefix of this run's own (other runs may share the PostgreSQL server) and
// removes whatever carries it once the run is over. It also gives the run a
// scratch directory of its own (on tmpfs where there is room) as TMPDIR.
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { postgresAdminUrl, SHARED_STORE_PREFIX_VARIABLE } from "./database.js";
import { useRunScratch } from "./scratch.js";
import { makeStoreTemplates } from "./store-templates.js";

/** What every run's prefix starts with: how a run finds the scratch directories of killed ones. */
const RUN_PREFIX_START = "platform_shared_";
/** Connections the teardown drops databases over (PostgreSQL allows 100 by default). */
const MAX_DROPS_AT_ONCE = 50;

export default async function setup(): Promise<() => Promise<void>> {
  // A database name as well as a directory name: lower case, digits and underscores.
  const prefix = `${RUN_PREFIX_START}${randomBytes(5).toString("hex")}`;
  process.env[SHARED_STORE_PREFIX_VARIABLE] = prefix;
  // Every file's tmpdir() (stores, configurations, spawned servers' data) is this run's own
  // directory from here on (scratch.ts). The Chromium setup, which runs first, keeps its
  // unpacked browser where later runs find it.
  const removeScratch = await useRunScratch(prefix, RUN_PREFIX_START);
  const teardown = async (): Promise<void> => {
    const failures: unknown[] = [];
    const adminUrl = postgresAdminUrl();
    if (adminUrl) {
      // All side by side: each DROP DATABASE waits for a checkpoint, and the ones requested together
      // share one. Fifty drops of written databases took 3.5 s over 8 connections, 1 s over 50.
      const admin = postgres(adminUrl, { max: MAX_DROPS_AT_ONCE, onnotice: () => {} });
      try {
        const rows = await admin<{ datname: string }[]>`select datname from pg_database`;
        const ours = rows.filter((r) => r.datname.startsWith(`${prefix}_`));
        const drops = await Promise.allSettled(ours.map(({ datname }) => admin.unsafe(`drop database if exists ${datname} with (force)`)));
        for (const d of drops) if (d.status === "rejected") failures.push(d.reason);
      } catch (error) {
        failures.push(error);
      } finally {
        await admin.end({ timeout: 5 });
      }
    }
    await removeScratch().catch((error: unknown) => failures.push(error));
    if (failures.length) throw new AggregateError(failures, `the run's teardown left databases or files named ${prefix}_… behind`);
  };
  // The PostgreSQL template carries the prefix too, so the same teardown drops it, even half made.
  try {
    await makeStoreTemplates(prefix, postgresAdminUrl());
  } catch (error) {
    // The setup's own error is the one to see.
    await teardown().catch(() => undefined);
    throw error;
  }
  return teardown;
}
