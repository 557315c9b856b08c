import { createHash } from "node:crypto";
import { cpSync, existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { openDatabase } from "../../src/db/client.js";
import { pgliteVersion } from "../../src/db/pglite-template.js";
import { systemTmpdir } from "./scratch.js";

// Stores copied from templates the global setup makes (or finds), instead of made from
// nothing for every test server: a new PGlite directory cost 1.6 s here (initdb, then the
// migrations), a copy of the template tens of milliseconds; on PostgreSQL, CREATE DATABASE …
// TEMPLATE skips the migrations. Without the global setup (a single file run by hand with another config) there is
// no template and stores are made from nothing, as before.

const PGLITE_MIGRATED = "PLATFORM_TEST_PGLITE_TEMPLATE";
const PGLITE_EMPTY = "PLATFORM_TEST_PGLITE_EMPTY_TEMPLATE";
const POSTGRES_MIGRATED = "PLATFORM_TEST_POSTGRES_TEMPLATE";
/** Written last into a set of PGlite templates: the set is whole. */
const COMPLETE = "complete";

/**
 * Makes the templates: a migrated PGlite directory (with the built-in roles) and an initialized
 * but empty one, kept between runs (pgliteTemplates); and when `adminUrl` is given (the run is on
 * PostgreSQL) a migrated PostgreSQL database, named with `prefix` so that the global teardown
 * drops it with the run's other databases. A run on PostgreSQL still opens a few PGlite stores
 * (the specs of PGlite itself), each of which cost an initdb and the migrations, 1.5–2 core-seconds,
 * when made from nothing; the PGlite templates are usually there already, from an earlier run.
 */
export async function makeStoreTemplates(prefix: string, adminUrl: string | undefined): Promise<void> {
  const [root] = await Promise.all([pgliteTemplates(), adminUrl ? makePostgresTemplate(prefix, adminUrl) : undefined]);
  process.env[PGLITE_EMPTY] = join(root, "empty");
  process.env[PGLITE_MIGRATED] = join(root, "migrated");
}

/**
 * The PGlite templates, made once and kept in the system's temporary directory under a name made
 * from what they are made of (PGlite's version, the migrations, the built-in roles, this file):
 * making them took each PGlite run two seconds before any test could start. A template older
 * than the code would still be a right place to start, as every open applies the migrations it
 * lacks and rewrites the built-in roles; the name only decides when a run makes new ones. Sets
 * unused for a week are removed; another checkout's set, in use, is left alone.
 */
async function pgliteTemplates(): Promise<string> {
  // One per user: another user's directory would not be ours to write, nor to trust.
  const cache = join(systemTmpdir(), `platform-test-templates-${process.getuid?.() ?? "user"}`);
  const key = await templateKey();
  const root = join(cache, key);
  const complete = join(root, COMPLETE);
  if (existsSync(complete)) {
    const now = new Date();
    await utimes(complete, now, now);
    return root;
  }
  await mkdir(cache, { recursive: true, mode: 0o700 });
  // Made aside and renamed into place, so that a run never copies a half-made set.
  const building = await mkdtemp(join(cache, "building-"));
  try {
    await makePgliteTemplates(building);
    await writeFile(join(building, COMPLETE), "");
  } catch (e) {
    await rm(building, { recursive: true, force: true });
    throw e;
  }
  let made = root;
  try {
    await rename(building, root);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOTEMPTY" && (e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    // Another run made the same set meanwhile; unless it is not whole yet, this run uses its own.
    if (existsSync(complete)) await rm(building, { recursive: true, force: true });
    else made = building;
  }
  await removeStale(cache, key);
  return made;
}

/** Sets not used for a week, and what a killed run left half made a day ago or more. */
async function removeStale(cache: string, key: string): Promise<void> {
  for (const name of await readdir(cache)) {
    if (name === key) continue;
    const path = join(cache, name);
    const used = await stat(name.startsWith("building-") ? path : join(path, COMPLETE)).catch(() => undefined);
    const maxAge = name.startsWith("building-") ? 86_400_000 : 7 * 86_400_000;
    if (!used || Date.now() - used.mtimeMs > maxAge) await rm(path, { recursive: true, force: true });
  }
}

/** A name for the templates that changes with anything they are made of. */
async function templateKey(): Promise<string> {
  const hash = createHash("sha256");
  hash.update(`pglite ${pgliteVersion()}\n`);
  const repo = fileURLToPath(new URL("../../", import.meta.url));
  const migrations = join(repo, "src/db/migrations");
  const files = [
    ...(await readdir(migrations, { recursive: true })).sort().map((f) => join(migrations, f)),
    join(repo, "src/capabilities/capabilities.ts"),
    join(repo, "src/db/built-in-roles.ts"),
    fileURLToPath(import.meta.url),
  ];
  // Paths relative to the checkout: two checkouts of the same code share one set.
  for (const file of files) {
    if ((await stat(file)).isFile()) hash.update(`${relative(repo, file)}\n`).update(await readFile(file));
  }
  return hash.digest("hex").slice(0, 16);
}

async function makePgliteTemplates(root: string): Promise<void> {
  const migrated = join(root, "migrated");
  const empty = join(root, "empty");
  const initialized = new PGlite(empty);
  await initialized.waitReady;
  // PGlite works in template1; initdb's two other databases are never opened, and without them
  // a copy is about a third of the files and a twentieth of the time (40 ms against 0.2–1 s).
  // One statement at a time: DROP DATABASE cannot run in the transaction a multi-statement exec is.
  for (const statement of [
    "alter database template0 is_template false",
    "drop database template0",
    "drop database postgres",
    "checkpoint",
  ]) {
    await initialized.exec(statement);
  }
  await initialized.close();
  cpSync(empty, migrated, { recursive: true });
  await (await openDatabase({ pgliteDir: migrated })).close();
}

async function makePostgresTemplate(prefix: string, adminUrl: string): Promise<void> {
  const name = `${prefix}_template`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin.unsafe(`create database ${name}`);
    await (await openDatabase({ databaseUrl: url.toString(), pgliteDir: "memory://" })).close();
    // CREATE DATABASE … TEMPLATE refuses a template in use: nobody may connect to it from now on.
    await admin.unsafe(`alter database ${name} with allow_connections false`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  process.env[POSTGRES_MIGRATED] = name;
}

/**
 * Fills `dir` (which must not exist yet) with a copy of a PGlite template: `migrated` holds the
 * schema and the built-in roles, `empty` only an initialized cluster. Does nothing without one.
 */
export async function copyPgliteTemplate(dir: string, kind: "migrated" | "empty"): Promise<void> {
  const template = process.env[kind === "migrated" ? PGLITE_MIGRATED : PGLITE_EMPTY];
  // Synchronous: Node 20's promise cp walks the 500 files of a cluster with a callback per step,
  // 190 ms a copy here against 27 ms for cpSync (and more while the other worker is busy).
  if (template) cpSync(template, dir, { recursive: true });
}

/** The migrated PostgreSQL database to copy new test databases from, if the global setup made one. */
export function postgresTemplate(): string | undefined {
  return process.env[POSTGRES_MIGRATED] || undefined;
}
