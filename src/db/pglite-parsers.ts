import { types, type PGlite } from "@electric-sql/pglite";

/**
 * Cuts PGlite's table of result parsers down to its built-in types and their arrays.
 *
 * Once open, PGlite holds a parser for every array type of the catalogue (316 entries), and it
 * copies the whole table into a new object for every result it parses: 110 µs a query here,
 * more than a primary-key read itself. Every column and expression the store reads has a
 * built-in type (text, integers, booleans, json, timestamps) or an array of one, and keeps its
 * parser; a type outside them reads as its text, as it did before for any type PGlite has no
 * parser of. `pglite-parsers.spec.ts` checks every column of the schema against the full table.
 */
export async function keepBuiltInTypeParsers(client: PGlite): Promise<void> {
  await client.waitReady;
  const builtIn = Object.keys(types.parsers);
  const oids = builtIn.map(Number).filter((oid) => Number.isInteger(oid));
  const arrays = await client.query<{ typarray: number }>(
    "select typarray::int as typarray from pg_type where oid = any($1::oid[]) and typarray <> 0",
    [oids],
  );
  const kept: PGlite["parsers"] = {};
  for (const key of [...builtIn, ...arrays.rows.map((r) => String(r.typarray))]) {
    const parser = client.parsers[key];
    if (parser) kept[key] = parser;
  }
  client.parsers = kept;
}
