import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { cp, mkdir, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { openDatabase } from "../../src/db/client.js";
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
const require = createRequire(import.meta.url);

/**
 * Makes the templates: a migrated PostgreSQL database when `adminUrl` is given (the run is on
 * PostgreSQL, and the few PGlite stores it still starts are made from nothing), named with
 * `prefix` so that the global teardown drops it with the run's other databases; otherwise a
 * migrated PGlite directory (with the built-in roles) and an initialized but empty one, kept
 * between runs (pgliteTemplates).
 */
export async function makeStoreTemplates(prefix: string, adminUrl: string | undefined): Promise<void> {
  if (adminUrl) return makePostgresTemplate(prefix, adminUrl);
  const root = await pgliteTemplates();
  process.env[PGLITE_EMPTY] = join(root, "empty");
  process.env[PGLITE_MIGRATED] = join(root, "migrated");
}

/**
 * The PGlite templates, made once and kept in the system's temporary directory under a name made
 * from what they are made of (PGlite's version, the migrations, the built-in roles, this file):
 * making them took each PGlite run two seconds before any test could start. A template older
 * than the code would still be a right place to start, as every open applies the migrations it
 * lacks and rewrites the built-in roles; the name only decides when a run makes new ones.
 */
async function pgliteTemplates(): Promise<string> {
  const cache = join(systemTmpdir(), "platform-test-templates");
  const key = await templateKey();
  const root = join(cache, key);
  if (existsSync(join(root, COMPLETE))) return root;
  await mkdir(cache, { recursive: true });
  // Made aside and renamed into place, so that a run never copies a half-made template.
  const building = await mkdtemp(join(cache, "building-"));
  try {
    await makePgliteTemplates(building);
    await writeFile(join(building, COMPLETE), "");
    await rename(building, root).catch(async (e: NodeJS.ErrnoException) => {
      // Another run made the same ones meanwhile.
      if (e.code !== "ENOTEMPTY" && e.code !== "EEXIST") throw e;
    });
  } finally {
    await rm(building, { recursive: true, force: true });
  }
  // Older templates, and what a killed run left half made an hour ago or more.
  for (const name of await readdir(cache)) {
    if (name === key) continue;
    const path = join(cache, name);
    if (!name.startsWith("building-") || Date.now() - (await stat(path)).mtimeMs > 3_600_000) await rm(path, { recursive: true, force: true });
  }
  return root;
}

/** A name for the templates that changes with anything they are made of. */
async function templateKey(): Promise<string> {
  const hash = createHash("sha256");
  hash.update(`pglite ${await pgliteVersion()}\n`);
  const migrations = fileURLToPath(new URL("../../src/db/migrations", import.meta.url));
  const files = [
    ...(await readdir(migrations, { recursive: true })).sort().map((f) => join(migrations, f)),
    fileURLToPath(new URL("../../src/authz/capabilities.ts", import.meta.url)),
    fileURLToPath(new URL("../../src/db/built-in-roles.ts", import.meta.url)),
    fileURLToPath(import.meta.url),
  ];
  for (const file of files) {
    if ((await stat(file)).isFile()) hash.update(`${file}\n`).update(await readFile(file));
  }
  return hash.digest("hex").slice(0, 16);
}

/** The installed PGlite's version (its package.json is not among what the package exports). */
async function pgliteVersion(): Promise<string> {
  for (let dir = dirname(require.resolve("@electric-sql/pglite")); dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = JSON.parse(await readFile(join(dir, "package.json"), "utf8").catch(() => "{}")) as { name?: string; version?: string };
    if (manifest.name === "@electric-sql/pglite" && manifest.version) return manifest.version;
  }
  throw new Error("@electric-sql/pglite's package.json not found");
}

async function makePgliteTemplates(root: string): Promise<void> {
  const migrated = join(root, "migrated");
  const empty = join(root, "empty");
  const initialized = new PGlite(empty);
  await initialized.waitReady;
  // PGlite works in template1; initdb's two other databases are never opened, and without them
  // a copy is about a third of the files and a twentieth of the time (40 ms against 0.2–1 s).
  // One statement at a time: DROP DATABASE cannot run in the transaction a multi-statement exec is.
  for (const statement of ["alter database template0 is_template false", "drop database template0", "drop database postgres", "checkpoint"]) {
    await initialized.exec(statement);
  }
  await initialized.close();
  await cp(empty, migrated, { recursive: true });
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
  if (template) await cp(template, dir, { recursive: true });
}

/** The migrated PostgreSQL database to copy new test databases from, if the global setup made one. */
export function postgresTemplate(): string | undefined {
  return process.env[POSTGRES_MIGRATED] || undefined;
}
