import { eq, getTableColumns, getTableName, is, sql } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import type { DatabaseHandle } from "./client.js";
import * as schema from "./schema.js";
import { rowReader, valuesStatement } from "./table-rows.js";

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

const tables = (Object.values(schema) as unknown[]).filter((t) => is(t, PgTable)) as PgTable[];

describe("rowReader over valuesStatement", () => {
  it("reads every table's rows as Drizzle's own select maps them (NULLs, timestamps, JSON, bigints, arrays)", async () => {
    const { db } = handle;
    const time = new Date("2026-11-28T04:05:06.789Z");
    await db.insert(schema.groups).values([
      { uid: "a".repeat(40), parentUid: null, name: "org", resourceLimits: { repos: 3 }, createTime: time, updateTime: time },
      {
        uid: `${"a".repeat(40)}/0123456789abcdef`,
        parentUid: "a".repeat(40),
        name: "child",
        verified: true,
        createTime: time,
        updateTime: time,
      },
    ]);
    await db.insert(schema.events).values({
      uid: "e".repeat(40),
      type: "t",
      source: "s",
      subject: "a".repeat(40),
      parentUid: null,
      time,
      data: { nested: { list: [1, "two", null] }, n: 1.5 },
    });
    let compared = 0;
    for (const table of tables) {
      const expected = await db.select().from(table).limit(50);
      const query = db.select().from(table).limit(50).toSQL();
      const got = (await valuesStatement(db, query, undefined).execute()).map((v) => rowReader(table).read(v));
      expect(got, getTableName(table)).toEqual(expected);
      compared += expected.length;
    }
    // The built-in roles, the two groups, the event and the server's settings at least.
    expect(compared).toBeGreaterThanOrEqual(4);
    const [group] = (
      await valuesStatement(db, db.select().from(schema.groups).where(eq(schema.groups.name, "org")).toSQL(), undefined).execute()
    ).map((v) => rowReader(schema.groups).read(v));
    expect(group).toEqual({
      uid: "a".repeat(40),
      parentUid: null,
      name: "org",
      description: "",
      resourceLimits: { repos: 3 },
      verified: false,
      createTime: time,
      updateTime: time,
    });
  });

  it("reads a row that starts past other values, and runs a named statement again with new values, in a transaction too", async () => {
    const { db } = handle;
    const query = db
      .select({ lead: sql<number>`1`, ...getTableColumns(schema.groups), tail: sql<string>`'end'` })
      .from(schema.groups)
      .where(eq(schema.groups.name, sql.placeholder("name")))
      .toSQL();
    const statement = valuesStatement(db, query, "table_rows_spec");
    const reader = rowReader(schema.groups);
    const [org] = await statement.execute({ name: "org" });
    expect(org).toHaveLength(reader.width + 2);
    expect(reader.read(org!, 1)).toMatchObject({ uid: "a".repeat(40), name: "org", parentUid: null });
    expect(org![reader.width + 1]).toBe("end");
    const inTx = await db.transaction((tx) => valuesStatement(tx, query, "table_rows_spec").execute({ name: "child" }));
    expect(reader.read(inTx[0]!, 1)).toMatchObject({ name: "child", verified: true, parentUid: "a".repeat(40) });
    expect(await statement.execute({ name: "nobody" })).toEqual([]);
  });

  it("builds one reader per table", () => {
    expect(rowReader(schema.groups)).toBe(rowReader(schema.groups));
    expect(rowReader(schema.groups).width).toBe(Object.keys(getTableColumns(schema.groups)).length);
  });
});
