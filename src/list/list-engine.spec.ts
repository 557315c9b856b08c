import { randomBytes } from "node:crypto";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { eq, inArray, isNull } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SecretBox } from "../crypto/index.js";
import { newChildUid, newRootUid, schema, type DatabaseHandle } from "../db/index.js";
import { DEFAULT_PAGE_SIZE, ListEngine, MAX_PAGE_SIZE, type ExtraFilters, type ListParams, type ListSource } from "./list-engine.js";
import { PAGE_TOKEN_LIFETIME_MS } from "./page-token.js";
import type { UidpFilter } from "./scope.js";
import { INLINE_ROOTS, visibilityCondition, type ListVisibility } from "./visibility.js";

// The List engine (docs/design.md, "Lists") against a real database: a copy of the migrated PGlite,
// or a fresh PostgreSQL database when DATABASE_URL is set. Every test lists inside a scope
// of its own (an organization, or uidp.ids), so tests do not see each other's rows.

const T0 = new Date("2030-01-01T00:00:00.000Z");
let now = T0.getTime();

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
let engine: ListEngine;
const box = new SecretBox(randomBytes(32));

beforeAll(async () => {
  engine = await ListEngine.create(handle.db, box, () => new Date(now));
});

const ALL: ListVisibility = { all: true };

// The three kinds of source the services describe: groups (their own hierarchy), custom roles
// (single-segment uids, scoped by path, built-ins visible to all) and advisories (global).
const groupsSource: ListSource<typeof schema.groups> = {
  table: schema.groups,
  uid: schema.groups.uid,
  parentUid: schema.groups.parentUid,
  isGroup: true,
  name: schema.groups.name,
  sortable: { name: schema.groups.name, create_time: schema.groups.createTime, update_time: schema.groups.updateTime },
};
const rolesSource: ListSource<typeof schema.roles> = {
  table: schema.roles,
  uid: schema.roles.uid,
  parentUid: schema.roles.parentUid,
  path: schema.roles.path,
  isGroup: false,
  globalRowsVisible: true,
  name: schema.roles.name,
  sortable: { name: schema.roles.name },
};
const advisoriesSource: ListSource<typeof schema.advisories> = {
  table: schema.advisories,
  uid: schema.advisories.uid,
  isGroup: false,
  sortable: {},
};

function uidp(f: Partial<UidpFilter>): UidpFilter {
  return { ancestorsOf: "", descendantsOf: "", childrenOf: "", inRoot: "", ids: [], ...f };
}

function params(p: Partial<ListParams>): ListParams {
  return { pageSize: 0, pageToken: "", orderBy: "", skip: 0, ...p };
}

interface GroupSeed {
  uid: string;
  parentUid: string | null;
  name: string;
  createTime?: Date;
}

async function insertGroups(seeds: GroupSeed[]): Promise<void> {
  await handle.db.insert(schema.groups).values(
    seeds.map((s) => ({
      uid: s.uid,
      parentUid: s.parentUid,
      name: s.name,
      createTime: s.createTime ?? T0,
      updateTime: s.createTime ?? T0,
    })),
  );
}

/** A new organization with `n` children named c00, c01, …; returns the root and the children's uids in uid order. */
async function org(n: number): Promise<{ root: string; children: string[] }> {
  const root = newRootUid();
  const children = Array.from({ length: n }, () => newChildUid(root));
  await insertGroups([
    { uid: root, parentUid: null, name: "org" },
    ...children.map((uid, i) => ({ uid, parentUid: root, name: `c${String(i).padStart(2, "0")}` })),
  ]);
  return { root, children: [...children].sort() };
}

const list = (p: Partial<ListParams>, visibility: ListVisibility = ALL, extra?: ExtraFilters) =>
  engine.list(handle.db, groupsSource, params(p), visibility, extra);

/** Every page of a query, following tokens; returns the uids in order and the pages' sizes and totals. */
async function walk(p: Partial<ListParams>, visibility: ListVisibility = ALL) {
  const uids: string[] = [];
  const pages: { size: number; total: bigint }[] = [];
  let pageToken = "";
  do {
    const page = await list({ ...p, pageToken }, visibility);
    uids.push(...page.rows.map((r) => r.uid));
    pages.push({ size: page.rows.length, total: page.totalCount });
    pageToken = page.nextPageToken;
  } while (pageToken && pages.length < 100);
  return { uids, pages };
}

/** The error a promise rejects with, as a ConnectError. */
async function refusal(p: Promise<unknown>): Promise<ConnectError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(ConnectError);
  return e as ConnectError;
}

function detail<D extends DescMessage>(err: ConnectError, desc: D): MessageShape<D> | undefined {
  return err.findDetails(desc)[0];
}

/** INVALID_ARGUMENT naming `field` in both the message and a BadRequest violation. */
async function expectInvalid(p: Promise<unknown>, field: string): Promise<void> {
  const err = await refusal(p);
  expect(err.code).toBe(Code.InvalidArgument);
  expect(err.rawMessage).toMatch(new RegExp(`^Invalid argument: ${field.replace(".", "\\.")}: `));
  expect(detail(err, BadRequestSchema)?.fieldViolations.map((v) => v.field)).toEqual([field]);
}

describe("ListEngine paging", () => {
  it("walks a scope in uid order across page boundaries, with the total on every page and no token on the last", async () => {
    const { root, children } = await org(7);
    const { uids, pages } = await walk({ uidp: uidp({ childrenOf: root }), pageSize: 3 });
    expect(uids).toEqual(children);
    expect(pages).toEqual([
      { size: 3, total: 7n },
      { size: 3, total: 7n },
      { size: 1, total: 7n },
    ]);
  });

  it("reads the first page and its exact total in one statement, and every later page in one", async () => {
    const { root, children } = await org(7);
    let statements = 0;
    // Counts the statements the engine starts (each is one db.select).
    const counted = new Proxy(handle.db, {
      get(target, prop, receiver) {
        if (prop === "select") statements++;
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const scope = uidp({ childrenOf: root });
    const first = await engine.list(counted, groupsSource, params({ uidp: scope, pageSize: 3 }), ALL);
    expect(statements).toBe(1);
    expect(first.totalCount).toBe(7n);
    expect(first.rows.map((r) => r.uid)).toEqual(children.slice(0, 3));
    // Rows are plain rows of the table, with nothing of the count on them.
    const [plain] = await handle.db.select().from(schema.groups).where(eq(schema.groups.uid, children[0]!));
    expect(first.rows[0]).toStrictEqual(plain);
    const second = await engine.list(counted, groupsSource, params({ uidp: scope, pageSize: 3, pageToken: first.nextPageToken }), ALL);
    expect(statements).toBe(2);
    expect(second.totalCount).toBe(7n);
  });

  it("builds a page's statement once per shape and binds each request's values into it, for every caller", async () => {
    const a = await org(5);
    const b = await org(5);
    // An engine of its own: no shape built yet.
    const fresh = await ListEngine.create(handle.db, box, () => new Date(now));
    const list = (p: Partial<ListParams>, v: ListVisibility) => fresh.list(handle.db, groupsSource, params(p), v);
    const mine: ListVisibility = { all: false, roots: [a.root, b.root] };
    const selects = vi.spyOn(handle.db, "select");
    try {
      const firstA = await list({ uidp: uidp({ childrenOf: a.root }), pageSize: 2 }, mine);
      expect(selects).toHaveBeenCalledTimes(1);
      // Same shape, other values (scope, page size, skip): the same statement, this request's rows.
      const firstB = await list({ uidp: uidp({ childrenOf: b.root }), pageSize: 3, skip: 1 }, mine);
      expect(selects).toHaveBeenCalledTimes(1);
      expect(firstA.rows.map((r) => r.uid)).toEqual(a.children.slice(0, 2));
      expect([firstA.totalCount, firstB.totalCount]).toEqual([5n, 5n]);
      expect(firstB.rows.map((r) => r.uid)).toEqual(b.children.slice(1, 4));
      // A later page is another shape (a cursor, no count): built once, then reused with another cursor.
      const secondA = await list({ uidp: uidp({ childrenOf: a.root }), pageSize: 2, pageToken: firstA.nextPageToken }, mine);
      expect(selects).toHaveBeenCalledTimes(2);
      const secondB = await list({ uidp: uidp({ childrenOf: b.root }), pageSize: 3, pageToken: firstB.nextPageToken }, mine);
      expect(selects).toHaveBeenCalledTimes(2);
      expect(secondA.rows.map((r) => r.uid)).toEqual(a.children.slice(2, 4));
      expect(secondB.rows.map((r) => r.uid)).toEqual([b.children[4]]);
      expect(secondB.totalCount).toBe(5n);
      // Another caller with as many roots shares the statement, and sees only its own roots' rows.
      const onlyB: ListVisibility = { all: false, roots: [b.root, `${b.root}/none`] };
      expect((await list({ uidp: uidp({ childrenOf: a.root }), pageSize: 2 }, onlyB)).rows).toEqual([]);
      expect((await list({ uidp: uidp({ childrenOf: b.root }), pageSize: 2 }, onlyB)).rows.map((r) => r.uid)).toEqual(
        b.children.slice(0, 2),
      );
      expect(selects).toHaveBeenCalledTimes(2);
      // A name filter, another order or scope filter, and another number of roots are other statements.
      expect((await list({ uidp: uidp({ childrenOf: a.root }), name: "c03" }, mine)).rows.map((r) => r.name)).toEqual(["c03"]);
      expect((await list({ uidp: uidp({ inRoot: a.root }), orderBy: "name desc", pageSize: 1 }, mine)).rows.map((r) => r.name)).toEqual([
        "org",
      ]);
      expect((await list({ uidp: uidp({ childrenOf: a.root }), pageSize: 2 }, { all: false, roots: [b.root] })).rows).toEqual([]);
      expect(selects).toHaveBeenCalledTimes(5);
      expect((await list({ uidp: uidp({ childrenOf: b.root }), name: "c01" }, mine)).rows.map((r) => r.name)).toEqual(["c01"]);
      expect(selects).toHaveBeenCalledTimes(5);
      // However many ids a request names, one statement: the ids travel as one array value.
      expect((await list({ uidp: uidp({ ids: [a.children[0]!] }) }, mine)).rows).toHaveLength(1);
      expect((await list({ uidp: uidp({ ids: [...a.children, ...b.children, `${a.root}/x"y,{z}`] }) }, mine)).rows).toHaveLength(10);
      expect(selects).toHaveBeenCalledTimes(6);
    } finally {
      selects.mockRestore();
    }
  });

  it("counts exactly when no row comes back: an empty scope is 0, a skip past the end still counts the set", async () => {
    const { root } = await org(4);
    const empty = await list({ uidp: uidp({ childrenOf: `${root}/nothing-here` }) });
    expect(empty.rows).toEqual([]);
    expect(empty.totalCount).toBe(0n);
    const past = await list({ uidp: uidp({ childrenOf: root }), skip: 10 });
    expect(past.rows).toEqual([]);
    expect(past.totalCount).toBe(4n);
    expect(past.skipped).toBe(10);
    const filtered = await list({ uidp: uidp({ childrenOf: root }), name: "c01", skip: 1 });
    expect(filtered.rows).toEqual([]);
    expect(filtered.totalCount).toBe(1n);
  });

  it("gives no next token when the last page is exactly full, and one when a row remains", async () => {
    const { root } = await org(6);
    const scope = uidp({ childrenOf: root });
    expect((await list({ uidp: scope, pageSize: 6 })).nextPageToken).toBe("");
    const first = await list({ uidp: scope, pageSize: 5 });
    expect(first.nextPageToken).not.toBe("");
    const second = await list({ uidp: scope, pageSize: 5, pageToken: first.nextPageToken });
    expect(second.rows).toHaveLength(1);
    expect(second.nextPageToken).toBe("");
  });

  it("continues right after the cursor when rows are inserted before and after it, and carries the first page's total", async () => {
    const { root, children } = await org(6);
    const scope = uidp({ childrenOf: root });
    const first = await list({ uidp: scope, pageSize: 3 });
    expect(first.rows.map((r) => r.uid)).toEqual(children.slice(0, 3));

    // "0…0" sorts before every random child uid, "f…f" after every one.
    const before = `${root}/${"0".repeat(16)}`;
    const after = `${root}/${"f".repeat(16)}`;
    await insertGroups([
      { uid: before, parentUid: root, name: "early" },
      { uid: after, parentUid: root, name: "late" },
    ]);

    const second = await list({ uidp: scope, pageSize: 10, pageToken: first.nextPageToken });
    expect(second.rows.map((r) => r.uid)).toEqual([...children.slice(3), after]);
    // Counted once, on the first page (docs/design.md, "Lists"): later pages do not recount.
    expect(second.totalCount).toBe(6n);
    expect((await list({ uidp: scope })).totalCount).toBe(8n);
  });

  it("orders by a time column with uid breaking ties, both directions, and the cursor holds across pages", async () => {
    const root = newRootUid();
    const at = (s: number) => new Date(T0.getTime() + s * 1000);
    // Three rows share one create_time, so only the uid tiebreak decides their order across a boundary.
    const seeds = [3, 1, 2, 2, 2, 0].map((s, i) => ({ uid: newChildUid(root), parentUid: root, name: `t${i}`, createTime: at(s) }));
    await insertGroups([{ uid: root, parentUid: null, name: "org" }, ...seeds]);
    const ascending = [...seeds]
      .sort((a, b) => a.createTime.getTime() - b.createTime.getTime() || (a.uid < b.uid ? -1 : 1))
      .map((s) => s.uid);

    for (const orderBy of ["create_time", "createTime asc", "created_at"]) {
      expect((await walk({ uidp: uidp({ childrenOf: root }), pageSize: 2, orderBy })).uids, orderBy).toEqual(ascending);
    }
    expect((await walk({ uidp: uidp({ childrenOf: root }), pageSize: 2, orderBy: "create_time desc" })).uids).toEqual(
      [...ascending].reverse(),
    );
  });

  it("orders by name with the uid tiebreak when names repeat (organizations may share a name)", async () => {
    // Root groups may share a name; put them in one scope through ids.
    const seeds = ["b", "a", "b", "c", "b"].map((name) => ({ uid: newRootUid(), parentUid: null, name }));
    await insertGroups(seeds);
    const ids = seeds.map((s) => s.uid);
    const expected = [...seeds].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.uid < b.uid ? -1 : 1)).map((s) => s.uid);
    expect((await walk({ uidp: uidp({ ids }), pageSize: 2, orderBy: "name" })).uids).toEqual(expected);
    expect((await walk({ uidp: uidp({ ids }), pageSize: 2, orderBy: "name desc" })).uids).toEqual([...expected].reverse());
  });

  it("applies skip after the cursor, on the page it is sent with, and echoes it", async () => {
    const { root, children } = await org(8);
    const scope = uidp({ childrenOf: root });
    const first = await list({ uidp: scope, pageSize: 2, skip: 1 });
    expect(first.rows.map((r) => r.uid)).toEqual(children.slice(1, 3));
    expect(first.skipped).toBe(1);
    expect(first.totalCount).toBe(8n);
    const second = await list({ uidp: scope, pageSize: 2, skip: 2, pageToken: first.nextPageToken });
    expect(second.rows.map((r) => r.uid)).toEqual(children.slice(5, 7));
    expect(second.skipped).toBe(2);
    const third = await list({ uidp: scope, pageSize: 2, pageToken: second.nextPageToken });
    expect(third.rows.map((r) => r.uid)).toEqual(children.slice(7));
    expect(third.skipped).toBe(0);
    expect(third.nextPageToken).toBe("");
  });

  it("restarts from the first page, recounting, when the token is older than its lifetime", async () => {
    const { root, children } = await org(4);
    const scope = uidp({ childrenOf: root });
    const first = await list({ uidp: scope, pageSize: 2 });
    // Before the cursor, so it shows only if the list restarts.
    const early = `${root}/${"0".repeat(16)}`;
    await insertGroups([{ uid: early, parentUid: root, name: "new" }]);
    try {
      now = T0.getTime() + PAGE_TOKEN_LIFETIME_MS;
      expect((await list({ uidp: scope, pageSize: 2, pageToken: first.nextPageToken })).rows.map((r) => r.uid)).toEqual(
        children.slice(2, 4),
      );
      now = T0.getTime() + PAGE_TOKEN_LIFETIME_MS + 1;
      const restarted = await list({ uidp: scope, pageSize: 2, pageToken: first.nextPageToken });
      expect(restarted.rows.map((r) => r.uid)).toEqual([early, children[0]]);
      expect(restarted.totalCount).toBe(5n);
    } finally {
      now = T0.getTime();
    }
  });
});

describe("ListEngine page_size", () => {
  let root: string;
  beforeAll(async () => {
    root = (await org(MAX_PAGE_SIZE + 5)).root;
  });

  it("reads 0 as the default size and caps large sizes at the maximum", async () => {
    const scope = uidp({ childrenOf: root });
    expect((await list({ uidp: scope, pageSize: 0 })).rows).toHaveLength(DEFAULT_PAGE_SIZE);
    expect((await list({ uidp: scope, pageSize: 1 })).rows).toHaveLength(1);
    expect((await list({ uidp: scope, pageSize: MAX_PAGE_SIZE + 1 })).rows).toHaveLength(MAX_PAGE_SIZE);
    const capped = await list({ uidp: scope, pageSize: 1_000_000 });
    expect(capped.rows).toHaveLength(MAX_PAGE_SIZE);
    expect(capped.totalCount).toBe(BigInt(MAX_PAGE_SIZE + 5));
    expect((await list({ uidp: scope, pageSize: 1_000_000, pageToken: capped.nextPageToken })).rows).toHaveLength(5);
  });

  it("refuses a negative page_size or skip on its field", async () => {
    await expectInvalid(list({ pageSize: -1 }), "page_size");
    await expectInvalid(list({ skip: -1 }), "skip");
  });
});

describe("ListEngine page tokens", () => {
  it("refuses a token reused with a different scope, name, order, extra filter or visibility", async () => {
    const { root, children } = await org(4);
    const scope = uidp({ childrenOf: root });
    const extra: ExtraFilters = { where: [eq(schema.groups.verified, false)], key: { verified: false } };
    const base = { uidp: scope, pageSize: 1 };
    const { nextPageToken } = await list(base, ALL, extra);
    expect(nextPageToken).not.toBe("");
    // The same query accepts it.
    expect((await list({ ...base, pageToken: nextPageToken }, ALL, extra)).rows.map((r) => r.uid)).toEqual([children[1]]);

    const reuse = (p: Partial<ListParams>, visibility: ListVisibility = ALL, e: ExtraFilters = extra) =>
      list({ ...base, ...p, pageToken: nextPageToken }, visibility, e);
    await expectInvalid(reuse({ uidp: uidp({ inRoot: root }) }), "page_token");
    await expectInvalid(reuse({ name: "c01" }), "page_token");
    await expectInvalid(reuse({ orderBy: "uid desc" }), "page_token");
    await expectInvalid(reuse({ orderBy: "name" }), "page_token");
    await expectInvalid(reuse({}, ALL, { where: [], key: null }), "page_token");
    await expectInvalid(reuse({}, { all: false, roots: [root] }), "page_token");
    // A different page size or skip is the same query.
    expect((await reuse({ pageSize: 2, skip: 1 })).rows.map((r) => r.uid)).toEqual([children[2], children[3]]);
  });

  it("refuses a token of one list in another over the same scope (groups' in roles')", async () => {
    const { root } = await org(3);
    const base = { uidp: uidp({ childrenOf: root }), pageSize: 1 };
    const { nextPageToken } = await list(base);
    expect(nextPageToken).not.toBe("");
    await expectInvalid(engine.list(handle.db, rolesSource, params({ ...base, pageToken: nextPageToken }), ALL), "page_token");
  });

  it("refuses a token that was altered or made up, and another replica's engine accepts a genuine one", async () => {
    const { root } = await org(3);
    const base = { uidp: uidp({ childrenOf: root }), pageSize: 1 };
    const { nextPageToken } = await list(base);
    const [body, sig] = nextPageToken.split(".");
    const payload = JSON.parse(Buffer.from(body!, "base64url").toString()) as { u: string };
    payload.u = `${root}/${"f".repeat(16)}`;
    const forged = `${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`;
    for (const bad of [forged, `${nextPageToken}x`, "not-a-token", "a.b"]) {
      await expectInvalid(list({ ...base, pageToken: bad }), "page_token");
    }
    // The HMAC key is a database setting, so an engine opened on the same database (a replica) accepts the token.
    const other = await ListEngine.create(handle.db, box, () => new Date(now));
    expect((await other.list(handle.db, groupsSource, params({ ...base, pageToken: nextPageToken }), ALL)).rows).toHaveLength(1);
  });
});

describe("ListEngine filters", () => {
  // root ─┬─ a ─┬─ a1 ── a1x
  //       │     └─ a2
  //       └─ b
  let root: string, a: string, a1: string, a1x: string, a2: string, b: string, other: string;
  beforeAll(async () => {
    root = newRootUid();
    a = newChildUid(root);
    b = newChildUid(root);
    a1 = newChildUid(a);
    a2 = newChildUid(a);
    a1x = newChildUid(a1);
    other = newRootUid();
    await insertGroups([
      { uid: root, parentUid: null, name: "root" },
      { uid: other, parentUid: null, name: "other" },
      { uid: a, parentUid: root, name: "a" },
      { uid: b, parentUid: root, name: "b" },
      { uid: a1, parentUid: a, name: "a1" },
      { uid: a2, parentUid: a, name: "same" },
      { uid: a1x, parentUid: a1, name: "same" },
    ]);
  });
  const sorted = (...uids: string[]) => [...uids].sort();
  const uidsOf = async (p: Partial<ListParams>, visibility: ListVisibility = ALL, extra?: ExtraFilters) =>
    (await list({ ...p, pageSize: 200 }, visibility, extra)).rows.map((r) => r.uid);

  it("descendants_of is strictly below, children_of one level, in_root the organization and everything below", async () => {
    expect(await uidsOf({ uidp: uidp({ descendantsOf: a }) })).toEqual(sorted(a1, a2, a1x));
    expect(await uidsOf({ uidp: uidp({ childrenOf: a }) })).toEqual(sorted(a1, a2));
    expect(await uidsOf({ uidp: uidp({ inRoot: root }) })).toEqual(sorted(root, a, b, a1, a2, a1x));
    expect(await uidsOf({ uidp: uidp({ descendantsOf: a1x }) })).toEqual([]);
  });

  it("ancestors_of lists the groups strictly above a uid", async () => {
    expect(await uidsOf({ uidp: uidp({ ancestorsOf: a1x }) })).toEqual(sorted(root, a, a1));
    expect(await uidsOf({ uidp: uidp({ ancestorsOf: a }) })).toEqual([root]);
    // An organization has none: an empty page, not an error.
    expect(await uidsOf({ uidp: uidp({ ancestorsOf: root }) })).toEqual([]);
  });

  it("combines set filters, ids and name with AND, and counts the filtered set", async () => {
    expect(await uidsOf({ uidp: uidp({ inRoot: root }), name: "same" })).toEqual(sorted(a2, a1x));
    expect(await uidsOf({ uidp: uidp({ childrenOf: a }), name: "same" })).toEqual([a2]);
    expect(await uidsOf({ uidp: uidp({ ids: [a, b, other], inRoot: root }) })).toEqual(sorted(a, b));
    expect(await uidsOf({ uidp: uidp({ ids: [a1x, b], descendantsOf: a }) })).toEqual([a1x]);
    const page = await list({ uidp: uidp({ inRoot: root }), name: "same", pageSize: 1 });
    expect(page.totalCount).toBe(2n);
  });

  it("applies extra filters", async () => {
    await handle.db
      .update(schema.groups)
      .set({ verified: true })
      .where(inArray(schema.groups.uid, [a, a1x]));
    const verified: ExtraFilters = { where: [eq(schema.groups.verified, true)], key: { verified: true } };
    expect(await uidsOf({ uidp: uidp({ inRoot: root }) }, ALL, verified)).toEqual(sorted(a, a1x));
  });

  it("refuses more than 1000 ids, an unknown order_by, and scopes on a global resource", async () => {
    const ids = Array.from({ length: 1001 }, () => newRootUid());
    await expectInvalid(list({ uidp: uidp({ ids }) }), "uidp.ids");
    expect(await uidsOf({ uidp: uidp({ ids: [...ids.slice(0, 999), b] }) })).toEqual([b]);
    await expectInvalid(list({ orderBy: "colour" }), "order_by");
    for (const f of [{ descendantsOf: a }, { childrenOf: a }, { inRoot: root }, { ancestorsOf: a1 }]) {
      await expectInvalid(engine.list(handle.db, advisoriesSource, params({ uidp: uidp(f) }), undefined), "uidp");
    }
  });

  describe("visibility", () => {
    it("lists only at and below the caller's roots", async () => {
      expect(await uidsOf({ uidp: uidp({ inRoot: root }) }, { all: false, roots: [a1] })).toEqual(sorted(a1, a1x));
      expect(await uidsOf({ uidp: uidp({ inRoot: root }) }, { all: false, roots: [b, a1x] })).toEqual(sorted(b, a1x));
      expect(await uidsOf({ uidp: uidp({ ids: [root, other, a] }) }, { all: false, roots: [other] })).toEqual([other]);
      expect(await uidsOf({ uidp: uidp({ inRoot: root }) }, { all: false, roots: [] })).toEqual([]);
      // The total counts only what the caller may see.
      expect((await list({ uidp: uidp({ inRoot: root }), pageSize: 1 }, { all: false, roots: [a] })).totalCount).toBe(4n);
    });

    it("lists for a caller with 3,000 roots (sibling groups) in one array parameter, and sees exactly their subtrees", async () => {
      // 3,000 siblings, each with a child; the caller sees 2,990 of them (and their children), not the
      // last ten nor a sibling named like a root with a suffix sorting before '/' (`<root>-x`).
      const { root: o, children } = await org(3000);
      const grandchildren = children.map((c) => newChildUid(c));
      const lookalike = `${children[0]!}-x`;
      await insertGroups([
        ...grandchildren.map((uid, i) => ({ uid, parentUid: children[i]!, name: "g" })),
        { uid: lookalike, parentUid: o, name: "lookalike" },
      ]);
      const roots = children.slice(0, 2990);
      const many: ListVisibility = { all: false, roots };
      const expected = [...roots, ...grandchildren.slice(0, 2990)].sort();

      const built = handle.db.select().from(schema.groups).where(visibilityCondition(groupsSource, many)).toSQL();
      expect(built.params.length).toBe(1);
      const { uids, pages } = await walk({ uidp: uidp({ inRoot: o }), pageSize: 1000 }, many);
      expect(uids).toEqual(expected);
      expect(pages[0]!.total).toBe(BigInt(expected.length));
    });

    it("keeps built-in roles visible to a caller with many roots", async () => {
      const { children } = await org(INLINE_ROOTS + 2);
      const custom = randomBytes(8).toString("hex");
      await handle.db.insert(schema.roles).values({
        uid: custom,
        parentUid: children[1]!,
        path: `${children[1]!}/${custom}`,
        name: "custom",
        createTime: T0,
        updateTime: T0,
      });
      const builtIn = (await handle.db.select({ uid: schema.roles.uid }).from(schema.roles).where(isNull(schema.roles.parentUid))).map(
        (r) => r.uid,
      );
      const roleUids = async (roots: string[]) =>
        (await engine.list(handle.db, rolesSource, params({ pageSize: 1000 }), { all: false, roots })).rows.map((r) => r.uid);
      expect(await roleUids(children)).toEqual([...builtIn, custom].sort());
      expect(await roleUids(children.filter((c) => c !== children[1]))).toEqual([...builtIn].sort());
      await handle.db.delete(schema.roles).where(eq(schema.roles.uid, custom));
    });

    it("refuses a group-held resource listed without recorded visibility (fail closed)", async () => {
      const err = await refusal(engine.list(handle.db, groupsSource, params({ uidp: uidp({ inRoot: root }) }), undefined));
      expect(err.code).toBe(Code.PermissionDenied);
    });

    it("lists a global resource without visibility", async () => {
      const page = await engine.list(handle.db, advisoriesSource, params({}), undefined);
      expect(page.totalCount).toBe(0n);
    });

    it("shows rows without a parent to every caller of a source that says so (built-in roles), and custom roles by path", async () => {
      const custom = randomBytes(8).toString("hex");
      await handle.db
        .insert(schema.roles)
        .values({ uid: custom, parentUid: a1, path: `${a1}/${custom}`, name: "custom", createTime: T0, updateTime: T0 });
      const roleUids = async (visibility: ListVisibility, f: Partial<UidpFilter> = {}) =>
        (await engine.list(handle.db, rolesSource, params({ uidp: uidp(f), pageSize: 200 }), visibility)).rows.map((r) => r.uid);
      const builtIn = (await handle.db.select({ uid: schema.roles.uid }).from(schema.roles)).map((r) => r.uid).filter((u) => u !== custom);
      expect(builtIn.length).toBeGreaterThan(0);
      const seen = await roleUids({ all: false, roots: [b] });
      expect(seen).toEqual(expect.arrayContaining(builtIn));
      expect(seen).not.toContain(custom);
      expect(await roleUids({ all: false, roots: [a] })).toContain(custom);
      // Scopes match a custom role's path, not its single-segment uid.
      expect(await roleUids(ALL, { descendantsOf: a })).toEqual([custom]);
      expect(await roleUids(ALL, { childrenOf: a1 })).toEqual([custom]);
      expect(await roleUids(ALL, { ancestorsOf: a1x })).toEqual([custom]);
      expect(await roleUids(ALL, { childrenOf: a })).toEqual([]);
    });
  });
});
