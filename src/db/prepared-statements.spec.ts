import type { Sql } from "postgres";
import { describe, expect, it } from "vitest";
import { preparingPostgres, StatementAdmission } from "./prepared-statements.js";

describe("StatementAdmission", () => {
  it("admits a text the second time it is seen, and from then on", () => {
    const a = new StatementAdmission(4);
    expect(a.admit("select 1")).toBe(false);
    expect(a.admit("select 1")).toBe(true);
    expect(a.admit("select 1")).toBe(true);
    expect(a.size).toBe(1);
  });

  it("admits no more than its limit, however often other texts come: the rest stay unprepared", () => {
    const a = new StatementAdmission(2);
    for (const t of ["a", "b", "c"]) {
      a.admit(t);
      a.admit(t);
    }
    expect(a.size).toBe(2);
    expect(a.admit("c")).toBe(false);
    expect(a.admit("a")).toBe(true);
  });

  it("forgets the texts seen once when there are too many: a flood of one-off texts stays bounded", () => {
    const a = new StatementAdmission(10, 3);
    for (const t of ["x", "y", "z"]) a.admit(t);
    a.admit("w"); // full: the three are forgotten, "w" is remembered
    expect(a.admit("x")).toBe(false);
    expect(a.admit("w")).toBe(true);
  });
});

/** A stand-in for postgres.js: records the options each `unsafe` query was sent with. */
function fakeSql(sent: { text: string; prepare: boolean | undefined; inTx: boolean }[], inTx = false): Sql {
  const sql = {
    unsafe: (text: string, _params?: unknown[], options?: { prepare?: boolean }) => {
      sent.push({ text, prepare: options?.prepare, inTx });
      return Promise.resolve([]);
    },
    begin: async (fn: (tx: Sql) => unknown) => fn(fakeSql(sent, true)),
    savepoint: async (fn: (tx: Sql) => unknown) => fn(fakeSql(sent, true)),
  };
  return sql as unknown as Sql;
}

describe("preparingPostgres", () => {
  it("prepares an unprepared query once its text is admitted, in transactions and savepoints too", async () => {
    const sent: { text: string; prepare: boolean | undefined; inTx: boolean }[] = [];
    const sql = preparingPostgres(fakeSql(sent), new StatementAdmission(8));
    await sql.unsafe("select $1", [1], { prepare: false });
    await sql.begin(async (tx) => {
      await tx.unsafe("select $1", [2], { prepare: false });
      await (tx as unknown as { savepoint: Sql["begin"] }).savepoint(async (sp) => sp.unsafe("select $1", [3], { prepare: false }));
    });
    expect(sent).toEqual([
      { text: "select $1", prepare: false, inTx: false },
      { text: "select $1", prepare: true, inTx: true },
      { text: "select $1", prepare: true, inTx: true },
    ]);
  });

  it("leaves a query Drizzle prepares, or one sent without options, as it is", async () => {
    const sent: { text: string; prepare: boolean | undefined; inTx: boolean }[] = [];
    const admission = new StatementAdmission(8);
    const sql = preparingPostgres(fakeSql(sent), admission);
    await sql.unsafe("select 2", [], { prepare: true });
    await sql.unsafe("select 3");
    expect(sent.map((s) => s.prepare)).toEqual([true, undefined]);
    expect(admission.size).toBe(0);
  });

  it("passes postgres.js's other forms on untouched (text and options, no parameters)", async () => {
    const seen: unknown[][] = [];
    const raw = { unsafe: (...args: unknown[]) => (seen.push(args), Promise.resolve([])) } as unknown as Sql;
    const sql = preparingPostgres(raw, new StatementAdmission(8));
    await (sql.unsafe as unknown as (...a: unknown[]) => Promise<unknown>)("select 1", { prepare: false });
    await (sql.unsafe as unknown as (...a: unknown[]) => Promise<unknown>)("select 1", { prepare: false });
    expect(seen).toEqual([
      ["select 1", { prepare: false }],
      ["select 1", { prepare: false }],
    ]);
  });

  it("sends a text past the limit unprepared, as before", async () => {
    const sent: { text: string; prepare: boolean | undefined; inTx: boolean }[] = [];
    const sql = preparingPostgres(fakeSql(sent), new StatementAdmission(1));
    for (const t of ["a", "a", "b", "b", "b"]) await sql.unsafe(t, [], { prepare: false });
    expect(sent.map((s) => `${s.text}:${s.prepare}`)).toEqual(["a:false", "a:true", "b:false", "b:false", "b:false"]);
  });
});
