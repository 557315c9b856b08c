import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, queryRows, type DatabaseHandle } from "./client.js";
import { keepBuiltInTypeParsers } from "./pglite-parsers.js";

// The store's PGlite keeps the parsers of the built-in types and their arrays only (pglite-parsers.ts).

let handle: DatabaseHandle;
let full: PGlite;
let trimmed: PGlite;

beforeAll(async () => {
  handle = await openDatabase({ pgliteDir: "memory://" });
  full = new PGlite();
  trimmed = new PGlite();
  await Promise.all([full.waitReady, keepBuiltInTypeParsers(trimmed)]);
});
afterAll(async () => {
  await Promise.all([handle?.close(), full?.close(), trimmed?.close()]);
});

describe("keepBuiltInTypeParsers", () => {
  it("keeps the parser PGlite has for the type of every column of the schema, and of every array of one", async () => {
    const columns = await queryRows<{ name: string; oid: number; array: number }>(
      handle.db,
      sql`select distinct format_type(a.atttypid, null) as name, a.atttypid::int as oid, t.typarray::int as array
          from pg_attribute a join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
          join pg_type t on t.oid = a.atttypid
          where n.nspname = 'public' and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped`,
    );
    expect(columns.map((c) => c.name)).toEqual(expect.arrayContaining(["text", "text[]", "timestamp with time zone", "jsonb", "bigint", "boolean", "integer"]));
    // Parsers of arrays are closures of each instance: what must match is whether there is one.
    const missing = columns.flatMap((c) => [c.oid, c.array]).filter((oid) => oid && (trimmed.parsers[oid] === undefined) !== (full.parsers[oid] === undefined));
    expect(missing).toEqual([]);
  });

  it("reads values of those types as before: arrays as arrays, bigints, json, timestamps", async () => {
    const query = `select array['a','b"c','{x,y}']::text[] as t, 9007199254740993::int8 as big, '{"k":[1]}'::jsonb as j,
      '2030-01-02T03:04:05.678Z'::timestamptz as ts, true as b, array[1,2]::int4[] as ints, 'x'::text as plain`;
    const [before, after] = await Promise.all([full.query(query), trimmed.query(query)]);
    expect(after.rows).toEqual(before.rows);
    expect(after.rows[0]).toMatchObject({ t: ["a", 'b"c', "{x,y}"], ints: [1, 2], j: { k: [1] }, b: true });
  });

  it("holds a small table: the per-query copy is what it is for", () => {
    expect(Object.keys(full.parsers).length).toBeGreaterThan(200);
    expect(Object.keys(trimmed.parsers).length).toBeLessThan(50);
  });
});
