import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import type { DatabaseHandle } from "./client.js";
import { runCompiled } from "./compiled.js";

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

describe("runCompiled", () => {
  it("builds a shape once per key and runs it with each call's values, in a transaction or not", async () => {
    let builds = 0;
    const statement = (a: number, b: string) => ({
      key: "compiled.spec sum",
      build: () => {
        builds++;
        return sql`SELECT ${sql.placeholder("a")}::int + 1 AS n, ${sql.placeholder("b")}::text AS s`;
      },
      values: { a, b },
    });
    expect(await runCompiled(handle.db, statement(1, "x"))).toEqual([{ n: 2, s: "x" }]);
    expect(await runCompiled(handle.db, statement(41, "y"))).toEqual([{ n: 42, s: "y" }]);
    const inTx = await handle.db.transaction((tx) => runCompiled(tx, statement(9, "z")));
    expect(inTx).toEqual([{ n: 10, s: "z" }]);
    expect(builds).toBe(1);
  });

  it("passes a null value through, and refuses a missing one", async () => {
    const statement = (values: Record<string, unknown>) => ({
      key: "compiled.spec null",
      build: () => sql`SELECT ${sql.placeholder("v")}::text IS NULL AS missing`,
      values,
    });
    expect(await runCompiled(handle.db, statement({ v: null }))).toEqual([{ missing: true }]);
    await expect(runCompiled(handle.db, statement({}))).rejects.toThrow(/No value for placeholder "v"/);
  });
});
