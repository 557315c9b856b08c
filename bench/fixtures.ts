// Bench data: a throw-away PostgreSQL database and the group rows both back-ends
// are seeded with. Rows go in with plain SQL (unnest batches), in the column
// shapes the server itself writes, because 10,000 creates through the API
// would dominate the run time.
import { randomBytes } from "node:crypto";
import postgres from "postgres";
import { createFreshDatabase, type FreshDatabase } from "../test/support/database.js";

/** Where the bench creates (and later drops) its databases. */
export const ADMIN_PG_URL = process.env["BENCH_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** The columns of `groups` (src/db/tables/groups.ts), all of them read by every hand-written server. */
export const GROUP_COLUMNS = [
  "uid",
  "parent_uid",
  "name",
  "description",
  "resource_limits",
  "verified",
  "create_time",
  "update_time",
] as const;

/** A `groups` row as postgres.js returns it. */
export interface GroupRow {
  uid: string;
  parent_uid: string | null;
  name: string;
  description: string;
  resource_limits: Record<string, number>;
  verified: boolean;
  create_time: Date;
  update_time: Date;
}

/** The REST/JSON shape of a group, as the service renders it (camelCase, RFC 3339 timestamps). */
export function groupJson(row: GroupRow): Record<string, unknown> {
  return {
    uid: row.uid,
    name: row.name,
    description: row.description,
    resourceLimits: row.resource_limits,
    verified: row.verified,
    createTime: row.create_time.toISOString(),
    updateTime: row.update_time.toISOString(),
  };
}

export type TempDatabase = FreshDatabase;

/** A fresh, empty database next to ADMIN_PG_URL's (`platform_bench_<random>`). */
export const createDatabase = (): Promise<TempDatabase> => createFreshDatabase(ADMIN_PG_URL, "platform_bench");

const hex16 = (): string => randomBytes(8).toString("hex");
const hex40 = (): string => randomBytes(20).toString("hex");

interface NewGroup {
  uid: string;
  parentUid: string | null;
  name: string;
}

export interface GroupPlan {
  /** Rows in insertion order: every parent precedes its children. */
  rows: NewGroup[];
  /** The org's direct children: the random point-select pool and the ListGroups scope. */
  pool: string[];
  /** A root the floor server's creates go under (kept apart from the measured scope). */
  floorCreatesParent: string;
}

/**
 * Under `orgUid` (created through the API, so the admin owns it): `children`
 * direct children, ten grandchildren under each of the first 200, and ten
 * more organizations of 100 children each, so the table is not just the
 * measured scope.
 */
export function planGroups(orgUid: string, children: number): GroupPlan {
  const rows: NewGroup[] = [];
  const floorCreatesParent = hex40();
  rows.push({ uid: floorCreatesParent, parentUid: null, name: "bench floor creates" });
  for (let o = 0; o < 10; o++) {
    const root = hex40();
    rows.push({ uid: root, parentUid: null, name: `other org ${o}` });
    for (let c = 0; c < 100; c++) rows.push({ uid: `${root}/${hex16()}`, parentUid: root, name: `member ${c}` });
  }
  const pool: string[] = [];
  for (let c = 0; c < children; c++) {
    const uid = `${orgUid}/${hex16()}`;
    pool.push(uid);
    rows.push({ uid, parentUid: orgUid, name: `child ${String(c).padStart(5, "0")}` });
  }
  for (const parent of pool.slice(0, 200)) {
    for (let g = 0; g < 10; g++) rows.push({ uid: `${parent}/${hex16()}`, parentUid: parent, name: `grandchild ${g}` });
  }
  return { rows, pool, floorCreatesParent };
}

/** The one query call both postgres.js (`sql.unsafe`) and PGlite (`query`) offer. */
export type Exec = (text: string, params: unknown[]) => Promise<unknown>;

const INSERT_BATCH = `insert into groups (${GROUP_COLUMNS.join(", ")})
  select u, p, n, 'bench fixture', '{}'::jsonb, false, $4::timestamptz, $4::timestamptz
  from unnest($1::text[], $2::text[], $3::text[]) as x(u, p, n)`;

/** Inserts the planned rows in batches. */
export async function insertGroups(exec: Exec, rows: NewGroup[], batchSize = 2_000): Promise<void> {
  const now = new Date().toISOString();
  for (let i = 0; i < rows.length; i += batchSize) {
    const batch = rows.slice(i, i + batchSize);
    await exec(INSERT_BATCH, [batch.map((r) => r.uid), batch.map((r) => r.parentUid), batch.map((r) => r.name), now]);
  }
}

export async function seedPostgres(url: string, rows: NewGroup[]): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    await insertGroups((text, params) => sql.unsafe(text, params as never[]), rows);
    // What autovacuum would do within its first minute, done at once so the runs that follow see it.
    await sql.unsafe("analyze groups");
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * Seeds a PGlite data directory no server holds open (the server is stopped meanwhile). No
 * ANALYZE: PGlite has no autovacuum, so the statistics are the server's own upkeep's to make
 * (src/db/pglite-upkeep.ts), as they are for a store filled through the API.
 */
export async function seedPglite(dir: string, rows: NewGroup[]): Promise<void> {
  // Imported here: the PostgreSQL part of the bench never loads the WASM build.
  const { PGlite } = await import("@electric-sql/pglite");
  const pg = new PGlite(dir);
  try {
    await insertGroups((text, params) => pg.query(text, params), rows);
  } finally {
    await pg.close();
  }
}
