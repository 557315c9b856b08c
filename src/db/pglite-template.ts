// A new embedded store starts as a copy of a cluster made once, at build, with the schema in it,
// rather than from PGlite's initdb and every migration (docs/design.md, "Storage").
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { packageRoot } from "../package/index.js";
import { MIGRATIONS_FOLDER } from "./migrations-folder.js";

/** The file that says which PGlite made a template (beside its `cluster/`, not in it). */
const STAMP = "made-by";
/** The cluster's version file: copied last, so a directory holding it holds the whole cluster. */
const PG_VERSION = "PG_VERSION";
/** Left in a data directory while a copy goes on: a copy cut short is started again, not opened. */
export const COPYING = ".platform-template-copy";

/** What `seedFromTemplate` found and did. */
export type Seeding = "existing" | "copied" | "no-template" | "not-empty" | "copy-failed";

/** The installed PGlite's version (its package.json is not among what the package exports). */
export function pgliteVersion(): string {
  const require = createRequire(import.meta.url);
  for (let dir = dirname(require.resolve("@electric-sql/pglite")); dir !== dirname(dir); dir = dirname(dir)) {
    let manifest: { name?: string; version?: string } = {};
    try {
      manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as typeof manifest;
    } catch {
      // not this directory
    }
    if (manifest.name === "@electric-sql/pglite" && manifest.version) return manifest.version;
  }
  throw new Error("@electric-sql/pglite's package.json not found");
}

/**
 * What a template is made of: the PGlite that made the cluster (its files are that build's) and the
 * migrations applied to it (the journal and every statement file), as a line each.
 */
function stampText(): string {
  const hash = createHash("sha256");
  const files = readdirSync(MIGRATIONS_FOLDER, { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".sql") || f.endsWith("_journal.json"))
    .sort();
  for (const file of files) hash.update(`${file}\n`).update(readFileSync(join(MIGRATIONS_FOLDER, file)));
  return `pglite ${pgliteVersion()}\nmigrations ${hash.digest("hex")}\n`;
}

/** This checkout's (or installed package's) root. */
function packageDir(): string {
  const dir = packageRoot();
  if (dir === undefined) throw new Error("platform-api's package.json not found above src/db");
  return dir;
}

/** Where the build leaves the template: `dist/pglite-template`, whether the server runs from dist/ or src/. */
export const defaultTemplateDir = (): string => join(packageDir(), "dist", "pglite-template");

/** Whether `templateDir` holds a whole template made by the installed PGlite from these migrations. */
export function templateIsCurrent(templateDir: string): boolean {
  try {
    return readFileSync(join(templateDir, STAMP), "utf8") === stampText();
  } catch {
    return false;
  }
}

/**
 * Makes the template in `templateDir` (replacing one made by another PGlite or from other
 * migrations) unless it is current: a cluster as PGlite's initdb makes it with the migrations
 * applied, checkpointed and closed. Nothing else: the built-in roles are written at each open with
 * that store's times, and nothing of a server's own (keys, identities) is in a store before its
 * first start. Made aside and renamed into place, so a template is whole or absent. Its files are
 * readable by all (it holds no secret): the image's build runs as root, its server as another user.
 */
export async function makePgliteTemplate(templateDir: string): Promise<"current" | "made"> {
  if (templateIsCurrent(templateDir)) return "current";
  // Imported here: only the build makes a template, in its own thread, with PGlite's own defaults
  // (a cluster's files do not depend on them) and Drizzle's migrator, as openDatabase migrates.
  const { PGlite } = await import("@electric-sql/pglite");
  const { drizzle } = await import("drizzle-orm/pglite");
  const { migrate } = await import("drizzle-orm/pglite/migrator");
  const building = `${templateDir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    const pg = new PGlite(join(building, "cluster"));
    await pg.waitReady;
    await migrate(drizzle(pg), { migrationsFolder: MIGRATIONS_FOLDER });
    await pg.exec("checkpoint");
    await pg.close();
    // A closed PGlite leaves its pid file; a copy must not carry it.
    rmSync(join(building, "cluster", "postmaster.pid"), { force: true });
    readableByAll(building);
    writeFileSync(join(building, STAMP), stampText());
    rmSync(templateDir, { recursive: true, force: true });
    renameSync(building, templateDir);
  } catch (e) {
    rmSync(building, { recursive: true, force: true });
    throw e;
  }
  return "made";
}

function readableByAll(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) chmodSync(path, 0o755);
    else if (entry.isFile()) chmodSync(path, 0o644);
  }
  chmodSync(dir, 0o755);
}

/**
 * Fills a new data directory with a copy of the template, before PGlite opens it; PGlite then
 * finds a cluster and only starts it. `dataDir` must exist (the lock is on it). A directory
 * holding a cluster (PG_VERSION) is left as it is ("existing"); so is one holding anything else
 * that is not a copy of ours cut short ("not-empty": PGlite refuses it as before). Without a
 * current template nothing is copied ("no-template") and PGlite runs its initdb, as it did before
 * templates. A copy that fails (a template the server's user cannot read, a full disk) is removed
 * with a warning, and PGlite makes the cluster itself: the template only saves time.
 */
export function seedFromTemplate(dataDir: string, templateDir: string): Seeding {
  if (existsSync(join(dataDir, PG_VERSION))) {
    // A copy that ended between its version file and the marker's removal.
    rmSync(join(dataDir, COPYING), { force: true });
    return "existing";
  }
  const entries = readdirSync(dataDir);
  if (entries.length > 0 && !entries.includes(COPYING)) return "not-empty";
  if (!templateIsCurrent(templateDir)) {
    clear(dataDir);
    return "no-template";
  }
  const cluster = join(templateDir, "cluster");
  try {
    clear(dataDir);
    writeFileSync(join(dataDir, COPYING), "");
    cpSync(cluster, dataDir, { recursive: true, filter: (src) => !(dirname(src) === cluster && basename(src) === PG_VERSION) });
    copyFileSync(join(cluster, PG_VERSION), join(dataDir, `${PG_VERSION}.new`));
    renameSync(join(dataDir, `${PG_VERSION}.new`), join(dataDir, PG_VERSION));
    rmSync(join(dataDir, COPYING));
  } catch (e) {
    clear(dataDir);
    process.emitWarning(
      `the embedded store's template (${templateDir}) could not be copied into ${dataDir} (${e instanceof Error ? e.message : String(e)}): PGlite makes the store itself, which takes longer`,
    );
    return "copy-failed";
  }
  return "copied";
}

/** Empties `dir`, keeping the directory itself (the lock is on it). */
function clear(dir: string): void {
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}
