import { sql } from "drizzle-orm";
import { jsonb, pgTable, serial, text } from "drizzle-orm/pg-core";
import { describe, expect, it } from "vitest";
import { knownRow, lockedInsertPart } from "./known-insert.js";
import { groups } from "./tables/groups.js";

const plain = pgTable("plain", {
  uid: text("uid").primaryKey(),
  note: text("note").notNull().default(""),
  extra: text("extra"),
  bag: jsonb("bag").$type<Record<string, unknown>>().notNull().default({}),
});
const computed = pgTable("computed", { uid: text("uid").primaryKey(), id: serial("id") });
const byFunction = pgTable("by_function", { uid: text("uid").primaryKey(), made: text("made").$defaultFn(() => "x") });

describe("knownRow", () => {
  it("fills what is not given with the column's constant default, or null, each default a fresh copy", () => {
    const a = knownRow(plain, { uid: "a" })!;
    expect(a).toEqual({ uid: "a", note: "", extra: null, bag: {} });
    (a["bag"] as Record<string, unknown>)["x"] = 1;
    expect(knownRow(plain, { uid: "b" })!["bag"]).toEqual({});
  });

  it("puts jsonb keys in jsonb's order, nested too: shorter first, then by bytes", () => {
    const row = knownRow(plain, { uid: "a", bag: { zz: 1, b: { yy: 1, a: 2 }, é: 3, aa: [{ bb: 1, c: 2 }] } })!;
    expect(JSON.stringify(row["bag"])).toBe('{"b":{"a":2,"yy":1},"aa":[{"c":2,"bb":1}],"zz":1,"é":3}');
  });

  it("keeps a key named __proto__ as a key, not as the object's prototype", () => {
    const bag = JSON.parse('{"__proto__":{"polluted":1},"a":1}') as Record<string, unknown>;
    const row = knownRow(plain, { uid: "a", bag })!;
    expect(JSON.stringify(row["bag"])).toBe('{"a":1,"__proto__":{"polluted":1}}');
    expect(Object.getPrototypeOf(row["bag"])).toBe(Object.prototype);
  });

  it("is unknown when the database would compute part of the row", () => {
    expect(knownRow(computed, { uid: "a" })).toBeUndefined();
    expect(knownRow(byFunction, { uid: "a" })).toBeUndefined();
    expect(knownRow(plain, { uid: "a", note: sql`now()::text` })).toBeUndefined();
  });
});

describe("lockedInsertPart", () => {
  it("names its shape by the table and the references that are set, never by the values", () => {
    const child = knownRow(groups, { uid: "o/c", parentUid: "o", name: "c", createTime: new Date(0), updateTime: new Date(0) })!;
    const root = knownRow(groups, { uid: "r", parentUid: null, name: "r", createTime: new Date(0), updateTime: new Date(0) })!;
    const a = lockedInsertPart(groups, child, groups.uid);
    expect(a.key).toBe("groups(parentUid)");
    expect(lockedInsertPart(groups, root, groups.uid).key).toBe("groups()");
    expect(a.values["c_parentUid"]).toBe("o");
    expect(a.values["c_createTime"]).toBe(new Date(0).toISOString());
  });
});
