import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgliteDirFromTemplate } from "../../test/support/fresh-store.js";
import { openDatabase, queryRows, type DatabaseHandle } from "./client.js";
import { PgliteUpkeep } from "./pglite-upkeep.js";

// The upkeep is PGlite's own (a PostgreSQL server has autovacuum), so this file opens a PGlite
// store on either test run.
let handle: DatabaseHandle;
let remove: () => Promise<void>;
beforeAll(async () => {
  const store = await pgliteDirFromTemplate("upkeep", "migrated");
  remove = store.remove;
  handle = await openDatabase({ pgliteDir: store.dir });
}, 60_000);
afterAll(async () => {
  await handle?.close();
  await remove?.();
});

const ORG = "b".repeat(40);
const upkeep = (onVacuumed?: (table: string, analyzed: boolean) => void, everyMs?: number) =>
  new PgliteUpkeep({
    db: handle.db,
    onError: (e) => {
      throw e;
    },
    ...(onVacuumed ? { onVacuumed } : {}),
    ...(everyMs ? { everyMs } : {}),
  });

async function insertChildren(from: number, n: number): Promise<void> {
  await handle.db.execute(sql`
    INSERT INTO groups (uid, parent_uid, name, create_time, update_time)
    SELECT ${ORG} || '/' || lpad(to_hex(g), 16, '0'), ${ORG}, 'child ' || g, now(), now()
    FROM generate_series(${from}::int, ${from + n - 1}::int) g`);
}

const pagesOf = async (table: string): Promise<number> =>
  Number((await queryRows<{ n: string | number }>(handle.db, sql`SELECT pg_relation_size(${table}::regclass) / 8192 AS n`))[0]!.n);

/** The planner's estimate of the org's children. */
const estimatedChildren = async (): Promise<number> => {
  const [top] = await queryRows<{ "QUERY PLAN": string }>(handle.db, sql`EXPLAIN SELECT * FROM groups WHERE parent_uid = ${ORG}`);
  return Number(/rows=(\d+)/.exec(top!["QUERY PLAN"])![1]);
};

describe("PgliteUpkeep", () => {
  it("vacuums every table holding anything, analyzing those never analyzed, then only vacuums until one drifts", async () => {
    await handle.db.execute(
      sql`INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES (${ORG}, NULL, 'org', now(), now())`,
    );
    const vacuumed: [string, boolean][] = [];
    const first = await upkeep((t, analyzed) => vacuumed.push([t, analyzed])).run();
    // The built-in roles and the new group at least; each reported as it was done.
    expect(first).toEqual(expect.arrayContaining(["groups", "roles"]));
    expect(vacuumed.filter(([, analyzed]) => analyzed).map(([t]) => t)).toEqual(first);
    expect(await upkeep().due()).toEqual([]);
    vacuumed.length = 0;
    expect(await upkeep((t, analyzed) => vacuumed.push([t, analyzed])).run()).toEqual([]);
    expect(vacuumed).toEqual(
      expect.arrayContaining([
        ["groups", false],
        ["roles", false],
      ]),
    );
  });

  it("gives the planner statistics again once a table has grown", async () => {
    await insertChildren(1, 10_000);
    // The statistics of one group (the org, whose parent is NULL) say no group has this parent.
    expect(await estimatedChildren()).toBeLessThan(100);
    expect(await upkeep().due()).toEqual(["groups"]);
    expect(await upkeep().run()).toEqual(["groups"]);
    const [stats] = await queryRows<{ reltuples: number }>(handle.db, sql`SELECT reltuples FROM pg_class WHERE relname = 'groups'`);
    expect(Number(stats!.reltuples)).toBeGreaterThan(9_000);
    expect(await estimatedChildren()).toBeGreaterThan(9_000);
    expect(await upkeep().due()).toEqual([]);
  });

  it("analyzes a table again once it has grown by a fifth since its last ANALYZE, however slowly", async () => {
    await handle.db.execute(sql`CREATE TABLE slow (id int PRIMARY KEY, pad text NOT NULL)`);
    const add = (from: number, n: number) =>
      handle.db.execute(sql`INSERT INTO slow SELECT g, repeat('x', 100) FROM generate_series(${from}::int, ${from + n - 1}::int) g`);
    await add(0, 10_000);
    const u = upkeep();
    expect(await u.run()).toContain("slow");
    // 8% more each round: vacuumed each time, analyzed once the growth since the ANALYZE passes 20%.
    const rounds: string[][] = [];
    for (let i = 1; i <= 3; i++) {
      await add(i * 100_000, 800);
      rounds.push((await u.run()).filter((t) => t === "slow"));
    }
    expect(rounds).toEqual([[], [], ["slow"]]);
  });

  it("takes back the space of deleted rows, where PGlite alone lets a table grow with every round", async () => {
    const ROWS = 4_000;
    const ROUNDS = 4;
    const churn = async (table: string, withUpkeep: boolean): Promise<{ first: number; last: number }> => {
      const t = sql.identifier(table);
      await handle.db.execute(sql`CREATE TABLE ${t} (id int PRIMARY KEY, pad text NOT NULL)`);
      const fill = (from: number) =>
        handle.db.execute(sql`INSERT INTO ${t} SELECT g, repeat('x', 100) FROM generate_series(${from}::int, ${from + ROWS - 1}::int) g`);
      await fill(0);
      if (withUpkeep) await upkeep().run();
      const first = await pagesOf(table);
      for (let i = 1; i <= ROUNDS; i++) {
        await handle.db.execute(sql`DELETE FROM ${t}`);
        await fill(i * ROWS);
        if (withUpkeep) await upkeep().run();
      }
      return { first, last: await pagesOf(table) };
    };
    // Nothing reclaimed: a new copy of the rows per round.
    const alone = await churn("churn_alone", false);
    expect(alone.last).toBeGreaterThanOrEqual(alone.first * (ROUNDS + 1) * 0.9);
    // Each round reuses what the last one freed.
    const kept = await churn("churn_kept", true);
    expect(kept.last).toBeLessThanOrEqual(kept.first * 2);
  }, 60_000);

  it("starts with a round and goes on every everyMs; stop() waits for the round under way and ends them", async () => {
    await handle.db.execute(sql`CREATE TABLE grown AS SELECT g AS id FROM generate_series(1, 20000) g`);
    const analyzed: string[] = [];
    const u = upkeep((t, a) => a && analyzed.push(t), 20);
    u.start();
    for (let i = 0; i < 200 && !analyzed.includes("grown"); i++) await new Promise((r) => setTimeout(r, 25));
    expect(analyzed).toContain("grown");
    await handle.db.execute(sql`CREATE TABLE grown_later AS SELECT g AS id FROM generate_series(1, 20000) g`);
    for (let i = 0; i < 200 && !analyzed.includes("grown_later"); i++) await new Promise((r) => setTimeout(r, 25));
    expect(analyzed).toContain("grown_later");
    await u.stop();
    await handle.db.execute(sql`CREATE TABLE grown_after_stop AS SELECT g AS id FROM generate_series(1, 20000) g`);
    await new Promise((r) => setTimeout(r, 200));
    expect(analyzed).not.toContain("grown_after_stop");
    expect(await upkeep().due()).toEqual(["grown_after_stop"]);
  });
});
