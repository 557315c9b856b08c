import { execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgliteDirFromTemplate } from "../../test/support/fresh-store.js";
import { isForeignKeyViolation, isUniqueViolation } from "../errors/pg-errors.js";
import { keepBuiltInTypeParsers } from "./pglite-parsers.js";
import { DatabaseError } from "./pglite-protocol.js";
import { PgliteThread } from "./pglite-thread.js";
import { SHARED_BUFFERS } from "./pglite-wasm.js";

// PGlite in its worker thread (pglite-thread.ts) answers as PGlite in-process does: the same values,
// the same errors, transactions that hold the store, notifications before the answer.

const VALUES = `select array['a','b"c']::text[] as t, 9007199254740993::int8 as big, '{"k":[1]}'::jsonb as j,
  '2030-01-02T03:04:05.678Z'::timestamptz as ts, true as b, array[1,2]::int4[] as ints, '\\x00ff'::bytea as bytes,
  null::text as none, 1.5::float8 as f`;
// What drizzle passes: these types stay text (drizzle-orm/pglite/session.js).
const DRIZZLE_PARSERS = { 1184: (v: string) => v, 1114: (v: string) => v, 1185: (v: string) => v };

let store: Awaited<ReturnType<typeof pgliteDirFromTemplate>>;
let thread: PgliteThread;
beforeAll(async () => {
  store = await pgliteDirFromTemplate("platform-pglite-thread", "empty");
  thread = await PgliteThread.open(store.dir);
  await thread.exec("create table parent (id int primary key); create table child (id int primary key, parent int references parent)");
});
afterAll(async () => {
  await thread?.close();
  await store?.remove();
});

describe("PgliteThread", () => {
  it("returns the values, fields and row modes PGlite returns in-process, with the store's parsers", async () => {
    const local = new PGlite();
    try {
      await keepBuiltInTypeParsers(local);
      for (const options of [undefined, { rowMode: "array" as const }, { rowMode: "array" as const, parsers: DRIZZLE_PARSERS }]) {
        const there = await thread.query(VALUES, [], options);
        const here = await local.query(VALUES, [], options);
        expect(there.rows).toEqual(here.rows);
        expect(there.fields).toEqual(here.fields);
      }
      const row = (await thread.query<{ big: bigint; ts: Date; bytes: Uint8Array }>(VALUES)).rows[0]!;
      expect(row.big).toBe(9007199254740993n);
      expect(row.ts).toBeInstanceOf(Date);
      expect([...row.bytes]).toEqual([0, 255]);
      const raw = (await thread.query<unknown[]>(VALUES, [], { rowMode: "array", parsers: DRIZZLE_PARSERS })).rows[0]!;
      expect(raw[3]).toBe("2030-01-02 03:04:05.678+00");
    } finally {
      await local.close();
    }
  });

  it("runs PostgreSQL with the store's shared_buffers, not PGlite's compiled-in 128MB (pglite-wasm.ts)", async () => {
    const { rows } = await thread.query<{ shared_buffers: string }>("show shared_buffers");
    expect(rows[0]!.shared_buffers).toBe(SHARED_BUFFERS);
  });

  it("passes parameters of every kind the store sends, and reports rows a write affected", async () => {
    const { rows } = await thread.query<{ a: string; b: number; c: unknown; d: boolean }>(
      "select $1::text as a, $2::int as b, $3::jsonb as c, $4::bool as d",
      ["x'y", 7, JSON.stringify({ n: [1] }), true],
    );
    expect(rows).toEqual([{ a: "x'y", b: 7, c: { n: [1] }, d: true }]);
    await thread.query("insert into parent values (100), (101)");
    expect((await thread.query("delete from parent where id >= 100")).affectedRows).toBe(2);
  });

  it("refuses a parser that changes its text: it cannot run in the thread", async () => {
    await expect(thread.query("select now()", [], { parsers: { 1184: (v: string) => new Date(v) } })).rejects.toThrow(
      /cannot run in PGlite's thread/,
    );
  });

  it("rejects with PostgreSQL's fields (SQLSTATE, table, constraint), which the services map", async () => {
    await thread.query("insert into parent values (1)");
    const duplicate = await thread.query("insert into parent values (1)").catch((e: unknown) => e);
    expect(duplicate).toBeInstanceOf(DatabaseError);
    expect(duplicate).toMatchObject({ code: "23505", table: "parent", constraint: "parent_pkey" });
    expect((duplicate as Error).message).toMatch(/duplicate key value/);
    expect(isUniqueViolation(duplicate)).toBe(true);
    const orphan = await thread.query("insert into child values (1, 999)").catch((e: unknown) => e);
    expect(isForeignKeyViolation(orphan, "child")).toBe(true);
    // Bad input the database refuses: a NUL byte in text, a huge number, the wrong type.
    await expect(thread.query("select $1::text", ["a\u0000b"])).rejects.toMatchObject({ code: "22021" });
    await expect(thread.query("select $1::int", ["9".repeat(400)])).rejects.toMatchObject({ code: "22003" });
    await expect(thread.query("select $1::int", ["one"])).rejects.toMatchObject({ code: "22P02" });
    // The store goes on after an error.
    expect((await thread.query<{ n: number }>("select 1 as n")).rows).toEqual([{ n: 1 }]);
  });

  it("holds the store for a transaction: other work waits until it commits, in the order it came", async () => {
    const order: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const tx = thread.transaction(async (t) => {
      await t.query("insert into parent values (10)");
      order.push("tx wrote");
      await held;
      await t.query("insert into parent values (11)");
      order.push("tx done");
      return "committed";
    });
    await new Promise((r) => setTimeout(r, 50));
    // Outside the transaction: waits for it, then sees both of its rows.
    const outside = thread.query<{ n: number }>("select count(*)::int as n from parent where id in (10, 11)").then((r) => {
      order.push("outside");
      return r.rows[0]!.n;
    });
    const second = thread.transaction(async (t) => {
      order.push("second tx");
      return (await t.query<{ n: number }>("select count(*)::int as n from parent where id in (10, 11)")).rows[0]!.n;
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(order).toEqual(["tx wrote"]);
    release();
    expect(await tx).toBe("committed");
    expect(await outside).toBe(2);
    expect(await second).toBe(2);
    expect(order).toEqual(["tx wrote", "tx done", "outside", "second tx"]);
  });

  it("rolls a transaction back when its callback throws or rolls back, and refuses queries after", async () => {
    const failed = await thread
      .transaction(async (t) => {
        await t.query("insert into parent values (20)");
        await t.query("insert into parent values (20)");
      })
      .catch((e: unknown) => e);
    expect(failed).toMatchObject({ code: "23505" });
    let kept: Parameters<Parameters<PgliteThread["transaction"]>[0]>[0] | undefined;
    await thread.transaction(async (t) => {
      kept = t;
      await t.query("insert into parent values (21)");
      await t.rollback();
      expect(t.closed).toBe(true);
    });
    await expect(kept!.query("select 1")).rejects.toThrow(/transaction is closed/);
    expect((await thread.query("select id from parent where id in (20, 21)")).rows).toEqual([]);
  });

  it("delivers a notification before the query that raised it resolves, to every listener of the channel, until unlistened", async () => {
    const heard: string[] = [];
    const stopA = await thread.listen("thread_test", (p) => heard.push(`a ${p}`));
    const stopB = await thread.listen("thread_test", (p) => heard.push(`b ${p}`));
    await thread.query("select pg_notify('thread_test', 'one')");
    expect(heard).toEqual(["a one", "b one"]);
    await stopA();
    await thread.transaction(async (t) => {
      await t.query("select pg_notify('thread_test', 'two')");
    });
    expect(heard).toEqual(["a one", "b one", "b two"]);
    await stopB();
    await thread.query("select pg_notify('thread_test', 'three')");
    await new Promise((r) => setTimeout(r, 20));
    expect(heard).toHaveLength(3);
  });

  it("delivers a notification once however often its channel was listened to and unlistened before", async () => {
    // As a store lent to one server after another is: each listens, and unlistens when it closes.
    for (let i = 0; i < 3; i++) await (await thread.listen("thread_again", () => {}))();
    const heard: string[] = [];
    const stop = await thread.listen("thread_again", (p) => heard.push(p));
    await thread.query("select pg_notify('thread_again', 'once')");
    await thread.query("select 1");
    expect(heard).toEqual(["once"]);
    await stop();
  });
});

describe("PgliteThread's end", () => {
  it("close() closes PGlite with its files whole, and the store answers 'shutting down' after", async () => {
    const dir = await pgliteDirFromTemplate("platform-pglite-thread-close", "empty");
    try {
      const first = await PgliteThread.open(dir.dir);
      await first.exec("create table kept (v text); insert into kept values ('still here')");
      const pending = first.query("select 1");
      await first.close();
      await pending;
      expect(first.closed).toBe(true);
      await expect(first.query("select 1")).rejects.toMatchObject({ code: "57P01" });
      await first.close();
      const again = await PgliteThread.open(dir.dir);
      expect((await again.query("select v from kept")).rows).toEqual([{ v: "still here" }]);
      await again.close();
    } finally {
      await dir.remove();
    }
  }, 60_000);

  it("keeps every committed write when its process is killed outright, with more written than shared_buffers holds", async () => {
    const dir = await pgliteDirFromTemplate("platform-pglite-thread-kill", "empty");
    try {
      // 50 MiB of rows (stored uncompressed), more than the 8MB of buffers (pglite-wasm.ts): pages
      // leave the buffers while the process runs. Then commits one by one; "committed" once the last
      // has answered.
      const script = `import { PgliteThread } from ${JSON.stringify(fileURLToPath(new URL("./pglite-thread.ts", import.meta.url)))};
        const t = await PgliteThread.open(${JSON.stringify(dir.dir)});
        await t.exec("create table bulk (v text); alter table bulk alter column v set storage external; create table each_one (n int)");
        await t.query("insert into bulk select repeat(md5(i::text), 64) from generate_series(1, 20000) as i");
        for (let n = 1; n <= 50; n++) await t.query("insert into each_one values ($1)", [n]);
        console.log("committed");
        setInterval(() => {}, 1000);`;
      const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      const exited = new Promise((resolve) => child.once("exit", resolve));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on("data", (d: Buffer) => d.toString().includes("committed") && resolve());
        child.once("exit", () => reject(new Error("the writer exited before it had committed")));
      });
      child.kill("SIGKILL");
      await exited;
      const again = await PgliteThread.open(dir.dir);
      try {
        expect((await again.query("select count(*)::int as n, sum(length(v))::int as bytes from bulk")).rows).toEqual([
          { n: 20_000, bytes: 20_000 * 32 * 64 },
        ]);
        expect((await again.query("select count(*)::int as n, max(n) as last from each_one")).rows).toEqual([{ n: 50, last: 50 }]);
        const { rows } = await again.query<{ mb: number }>("select pg_total_relation_size('bulk') / 1048576 as mb");
        expect(rows[0]!.mb).toBeGreaterThan(32);
      } finally {
        await again.close();
      }
    } finally {
      await dir.remove();
    }
  }, 120_000);

  it("rejects open() with PGlite's error when the directory is not a store", async () => {
    await expect(PgliteThread.open("/dev/null/not-a-directory")).rejects.toThrow();
  }, 60_000);

  it("does not keep a process alive once no answer is due", async () => {
    // A process that opened a store and queried it, and never closed it, ends by itself.
    const script = `import { PgliteThread } from ${JSON.stringify(fileURLToPath(new URL("./pglite-thread.ts", import.meta.url)))};
      const t = await PgliteThread.open("memory://"); console.log((await t.query("select 41 + 1 as n")).rows[0].n);`;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      timeout: 60_000,
    });
    expect(stdout.trim()).toBe("42");
  }, 90_000);

  it("keeps a process with nothing else to do alive until close() has returned", async () => {
    // As vitest's global setup is when it makes the store templates: without the ref, the process
    // ended inside close(), with code 0 and nothing printed after.
    const script = `import { PgliteThread } from ${JSON.stringify(fileURLToPath(new URL("./pglite-thread.ts", import.meta.url)))};
      const t = await PgliteThread.open("memory://"); await t.query("select 1"); await t.close(); console.log("closed");`;
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      timeout: 60_000,
    });
    expect(stdout.trim()).toBe("closed");
  }, 90_000);
});
