import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgliteDirFromTemplate } from "../../test/support/fresh-store.js";
import { keepBuiltInTypeParsers } from "./pglite-parsers.js";

// The store's PGlite keeps the parsers of the built-in types and their arrays only (pglite-parsers.ts).

const migrationsFolder = fileURLToPath(new URL("./migrations", import.meta.url));
const VALUES = `select array['a','b"c','{x,y}']::text[] as t, 9007199254740993::int8 as big, '{"k":[1]}'::jsonb as j,
  '2030-01-02T03:04:05.678Z'::timestamptz as ts, true as b, array[1,2]::int4[] as ints, 'x'::text as plain`;

let client: PGlite;
let store: Awaited<ReturnType<typeof pgliteDirFromTemplate>>;
/** The types PGlite had a parser for before the cut. */
let parsedBefore: Set<string>;
let valuesBefore: unknown[];

beforeAll(async () => {
  // One instance (on a copy of the migrated template: an initdb and the migrations cost two
  // seconds; migrate() then finds nothing to do): read what it does in full, then cut it down.
  store = await pgliteDirFromTemplate("platform-pglite-parsers", "migrated");
  client = new PGlite(store.dir);
  await client.waitReady;
  parsedBefore = new Set(Object.keys(client.parsers));
  valuesBefore = (await client.query(VALUES)).rows;
  await keepBuiltInTypeParsers(client);
  await migrate(drizzle(client), { migrationsFolder });
});
afterAll(async () => {
  await client?.close();
  await store?.remove();
});

describe("keepBuiltInTypeParsers", () => {
  it("keeps a parser for the type of every column of the schema, and for every array of one, that PGlite had one for", async () => {
    const columns = await client.query<{ name: string; oid: number; array: number }>(
      `select distinct format_type(a.atttypid, null) as name, a.atttypid::int as oid, t.typarray::int as array
       from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
       join pg_type t on t.oid = a.atttypid
       where n.nspname = 'public' and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped`,
    );
    expect(columns.rows.map((c) => c.name)).toEqual(
      expect.arrayContaining(["text", "text[]", "timestamp with time zone", "jsonb", "bigint", "boolean", "integer"]),
    );
    const lost = columns.rows
      .flatMap((c) => [c.oid, c.array])
      .filter((oid) => oid && parsedBefore.has(String(oid)) && !client.parsers[oid]);
    expect(lost).toEqual([]);
  });

  it("reads values of those types as before: arrays as arrays, bigints, json, timestamps", async () => {
    const after = (await client.query(VALUES)).rows;
    expect(after).toEqual(valuesBefore);
    expect(after[0]).toMatchObject({ t: ["a", 'b"c', "{x,y}"], ints: [1, 2], j: { k: [1] }, b: true });
  });

  it("holds a small table: the per-query copy is what it is for", () => {
    expect(parsedBefore.size).toBeGreaterThan(200);
    expect(Object.keys(client.parsers).length).toBeLessThan(50);
  });
});
