import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgliteDirFromTemplate } from "../../test/support/fresh-store.js";
import { PgliteStatements } from "./pglite-statements.js";

let pg: PGlite;
let store: Awaited<ReturnType<typeof pgliteDirFromTemplate>>;

beforeAll(async () => {
  store = await pgliteDirFromTemplate("platform-pglite-statements", "empty");
  pg = new PGlite(store.dir);
  await pg.waitReady;
  await pg.exec(`
    create table items (id int primary key, name text not null unique, tags text[], doc jsonb, ok boolean, at timestamptz);
    insert into items values (1, 'one', '{a,b}', '{"k": [1, 2]}', true, '2026-01-02T03:04:05.678Z'), (2, 'two', null, null, null, null);
  `);
}, 60_000);

afterAll(async () => {
  await pg?.close();
  await store?.remove();
});

const prepared = async (): Promise<string[]> =>
  (await pg.query<{ statement: string }>("select statement from pg_prepared_statements order by statement")).rows.map((r) => r.statement);

describe("PgliteStatements", () => {
  it("answers as PGlite's query does: rows by name or as arrays, typed values, nulls, fields and affected rows", async () => {
    const statements = new PgliteStatements(pg);
    const text = "select id, name, tags, doc, ok, at from items where id = any($1::int[]) order by id";
    for (const rowMode of [undefined, "array"] as const) {
      const ours = await statements.query(text, [[1, 2]], rowMode ? { rowMode } : undefined);
      const theirs = await pg.query(text, [[1, 2]], rowMode ? { rowMode } : undefined);
      expect(ours.rows).toEqual(theirs.rows);
      expect(ours.fields).toEqual(theirs.fields);
    }
    const [first] = (await statements.query<{ at: Date; doc: unknown; tags: string[] }>(text, [[1]], undefined)).rows;
    expect(first!.at).toEqual(new Date("2026-01-02T03:04:05.678Z"));
    expect(first!.doc).toEqual({ k: [1, 2] });
    expect(first!.tags).toEqual(["a", "b"]);
    // A caller's parser wins (drizzle keeps timestamps as text).
    const raw = await statements.query<{ at: string }>("select at from items where id = $1", [1], { parsers: { 1184: (v: string) => v } });
    expect(typeof raw.rows[0]!.at).toBe("string");
    // Parameters typed by the statement: a Date, an object for jsonb, a boolean, a null.
    const inserted = await statements.query(
      "insert into items (id, name, tags, doc, ok, at) values ($1, $2, $3, $4, $5, $6)",
      [3, "three", ["x"], { y: 1 }, false, new Date("2026-02-03T00:00:00Z")],
      undefined,
    );
    expect(inserted).toEqual({ rows: [], fields: [], affectedRows: 1 });
    expect((await pg.query("select doc, ok, at from items where id = 3")).rows).toEqual([
      { doc: { y: 1 }, ok: false, at: new Date("2026-02-03T00:00:00Z") },
    ]);
    expect((await statements.query("update items set ok = $1 where id >= $2", [null, 2], undefined)).affectedRows).toBe(2);
    expect((await statements.query("delete from items where id = $1", [3], undefined)).affectedRows).toBe(1);
  });

  it("prepares a text the second time it runs, and no more texts than its limit", async () => {
    const statements = new PgliteStatements(pg, 2);
    const before = await prepared();
    const texts = ["select 1 + $1::int as n", "select 2 + $1::int as n", "select 3 + $1::int as n"];
    await statements.query(texts[0]!, [1], undefined);
    expect(await prepared()).toEqual(before);
    for (const text of texts) {
      for (let i = 0; i < 3; i++)
        expect((await statements.query<{ n: number }>(text, [i], undefined)).rows).toEqual([{ n: Number(text[7]) + i }]);
    }
    const made = (await prepared()).filter((s) => !before.includes(s));
    expect(made).toEqual(texts.slice(0, 2));
  });

  it("throws PostgreSQL's error with its fields, the statement and its parameters, and goes on working", async () => {
    const statements = new PgliteStatements(pg);
    const text = "insert into items (id, name) values ($1, $2)";
    await statements.query(text, [10, "ten"], undefined);
    const error = await statements.query(text, [11, "ten"], undefined).then(
      () => undefined,
      (e: unknown) => e as Record<string, unknown>,
    );
    expect(error).toMatchObject({ code: "23505", table: "items", constraint: "items_name_key", query: text, params: [11, "ten"] });
    await expect(statements.query("select nope from items", [], undefined)).rejects.toMatchObject({ code: "42703" });
    expect((await statements.query<{ name: string }>("select name from items where id = $1", [10], undefined)).rows).toEqual([
      { name: "ten" },
    ]);
  });

  it("prepares again a statement whose table changed shape since", async () => {
    const statements = new PgliteStatements(pg);
    const text = "select * from items where id = $1";
    await statements.query(text, [1], undefined);
    await statements.query(text, [1], undefined);
    await pg.exec("alter table items add column extra int default 7");
    const [row] = (await statements.query<{ extra: number }>(text, [1], undefined)).rows;
    expect(row!.extra).toBe(7);
  });

  it("leaves a NOTIFY the statement raised to PGlite, which delivers it once to its listeners", async () => {
    const statements = new PgliteStatements(pg);
    const heard: string[] = [];
    const unlisten = await pg.listen("statements_spec", (payload) => heard.push(payload));
    try {
      for (let i = 0; i < 3; i++) await statements.query("select pg_notify('statements_spec', $1)", [`n${i}`], undefined);
      expect(heard).toEqual(["n0", "n1", "n2"]);
    } finally {
      await unlisten();
    }
  });
});
