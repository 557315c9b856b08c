import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { afterEach, describe, expect, it } from "vitest";
import { freshStorePerTest } from "../../test/support/fresh-store.js";
import { BUILT_IN_ROLES } from "../capabilities/index.js";
import { openDatabase, queryRows, type Database, type DatabaseHandle } from "./client.js";
import { PgliteThread } from "./pglite-thread.js";
import * as schema from "./schema.js";
import { newChildUid, newRootBindingUid, newRootUid } from "./uid.js";

// Opening the database writes the built-in roles from the catalogue (docs/design.md,
// "Built-in roles"). Each test has a store that outlives a handle, so closing and opening again
// is a restart: a PGlite, or a fresh PostgreSQL database when DATABASE_URL is set.

const T0 = new Date("2030-01-01T00:00:00.000Z");

const store = freshStorePerTest("platform-built-in-roles");
/**
 * On PGlite, the test's store stays open across its starts: a start is openDatabase on it, which
 * migrates and writes the roles as the server's start does. Booting PGlite each time cost half a
 * second of CPU; a restart of the PGlite directory itself is test/e2e/built-in-roles.spec.ts's.
 */
let pglite: PgliteThread | undefined;
afterEach(async () => {
  await pglite?.close();
  pglite = undefined;
});

/** Opens the store (a start), runs `body` and closes it again. */
async function start<T>(body: (handle: DatabaseHandle) => Promise<T>): Promise<T> {
  if (!store.databaseUrl) pglite ??= await PgliteThread.open(join(store.dir, "pglite"));
  const handle = await openDatabase(
    store.databaseUrl ? { pgliteDir: "memory://", databaseUrl: store.databaseUrl } : { pgliteDir: "memory://", pglite },
  );
  try {
    return await body(handle);
  } finally {
    await handle.close();
  }
}

interface Row extends Record<string, unknown> {
  uid: string;
  path: string;
  name: string;
  description: string;
  capabilities: string[];
  update_time: unknown;
  /** Changes whenever the row is rewritten, even with equal values. */
  xmin: string;
}

/** Every global (built-in) row, with what tells whether it was written. */
async function builtInRows(db: Database): Promise<Row[]> {
  return queryRows<Row>(
    db,
    sql`select uid, path, name, description, capabilities, update_time, xmin::text as xmin from roles where parent_uid is null order by uid`,
  );
}

const byUid = <T extends { uid: string }>(rows: readonly T[]) => [...rows].sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
const catalogue = byUid(BUILT_IN_ROLES).map((r) => ({
  uid: r.uid,
  path: r.uid,
  name: r.name,
  description: r.description,
  capabilities: r.capabilities,
}));
const content = (rows: Row[]) =>
  rows.map(({ uid, path, name, description, capabilities }) => ({ uid, path, name, description, capabilities }));
const sorted = (uids: string[]) => [...uids].sort();

/** A role held by a group, which the catalogue must never touch. */
async function insertCustomRole(db: Database): Promise<string> {
  const group = newRootUid();
  const uid = "0123456789abcdef";
  await db.insert(schema.groups).values({ uid: group, name: "org", createTime: T0, updateTime: T0 });
  await db.insert(schema.roles).values({
    uid,
    parentUid: group,
    path: `${group}/${uid}`,
    name: "viewer",
    description: "mine",
    capabilities: ["repo.list"],
    createTime: T0,
    updateTime: T0,
  });
  return uid;
}

describe("built-in roles written at start", () => {
  it("a fresh database holds exactly the catalogue", async () => {
    await start(async ({ db, builtInRoles }) => {
      expect(content(await builtInRows(db))).toEqual(catalogue);
      expect(builtInRoles).toEqual({ written: expect.any(Array), removed: [], kept: [] });
      expect(sorted(builtInRoles.written)).toEqual(catalogue.map((r) => r.uid));
    });
  });

  it("a second start with the same catalogue writes nothing", async () => {
    const first = await start(async ({ db }) => builtInRows(db));
    await start(async ({ db, builtInRoles }) => {
      expect(builtInRoles).toEqual({ written: [], removed: [], kept: [] });
      // Same update_time and same row version: no row was rewritten.
      expect(await builtInRows(db)).toEqual(first);
    });
  });

  it("restores a built-in row changed or deleted by hand at the next start, and only those rows", async () => {
    const { before, custom } = await start(async ({ db }) => {
      await db
        .update(schema.roles)
        .set({ capabilities: ["repo.list"], description: "changed by hand" })
        .where(eq(schema.roles.uid, "viewer"));
      await db.update(schema.roles).set({ name: "renamed", path: "renamed" }).where(eq(schema.roles.uid, "editor"));
      await db.delete(schema.roles).where(eq(schema.roles.uid, "registry.push"));
      const custom = await insertCustomRole(db);
      return { before: await builtInRows(db), custom };
    });
    await start(async ({ db, builtInRoles }) => {
      expect(builtInRoles).toEqual({ written: expect.any(Array), removed: [], kept: [] });
      expect(sorted(builtInRoles.written)).toEqual(["editor", "registry.push", "viewer"]);
      const after = await builtInRows(db);
      expect(content(after)).toEqual(catalogue);
      const untouched = before.filter((r) => !["editor", "viewer"].includes(r.uid));
      expect(after.filter((r) => untouched.some((u) => u.uid === r.uid))).toEqual(untouched);
      for (const uid of ["editor", "viewer"])
        expect(after.find((r) => r.uid === uid)?.xmin).not.toBe(before.find((r) => r.uid === uid)?.xmin);
      const [customRow] = await db.select().from(schema.roles).where(eq(schema.roles.uid, custom));
      expect(customRow).toMatchObject({ name: "viewer", description: "mine", capabilities: ["repo.list"] });
    });
  });

  it("opens a database that applied the old 0002, which inserted the roles, without running it again", async () => {
    // Such a database recorded the old file's hash; the migrator must go by the journal's `when` only.
    const applied = await start(async ({ db }) => {
      await db.execute(sql`update drizzle.__drizzle_migrations set hash = 'hash of the old 0002' where created_at = 1795359584954`);
      return queryRows<{ id: number; hash: string }>(db, sql`select id, hash from drizzle.__drizzle_migrations order by id`);
    });
    expect(applied.map((m) => m.hash)).toContain("hash of the old 0002");
    await start(async ({ db, builtInRoles }) => {
      expect(await queryRows(db, sql`select id, hash from drizzle.__drizzle_migrations order by id`)).toEqual(applied);
      expect(builtInRoles).toEqual({ written: [], removed: [], kept: [] });
    });
  });

  it("deletes a built-in row the catalogue dropped unless a binding, invite or IdP still refers to it", async () => {
    const legacy = (name: string) => ({
      uid: name,
      parentUid: null,
      path: name,
      name,
      capabilities: ["repo.list"],
      createTime: T0,
      updateTime: T0,
    });
    const referenced = ["legacy.binding", "legacy.idp", "legacy.invite", "legacy.root"];
    await start(async ({ db }) => {
      await db.insert(schema.roles).values(["legacy.free", ...referenced].map(legacy));
      await insertCustomRole(db);
      const group = newRootUid();
      const identity = newChildUid(group);
      await db.insert(schema.groups).values({ uid: group, name: "refs", createTime: T0, updateTime: T0 });
      await db.insert(schema.identities).values({ uid: identity, parentUid: group, name: "ci", createTime: T0, updateTime: T0 });
      await db
        .insert(schema.roleBindings)
        .values({ uid: newChildUid(group), parentUid: group, identityUid: identity, roleUid: "legacy.binding", createTime: T0 });
      await db
        .insert(schema.rootRoleBindings)
        .values({ uid: newRootBindingUid(), identityUid: identity, roleUid: "legacy.root", createTime: T0 });
      await db.insert(schema.groupInvites).values({
        uid: newChildUid(group),
        parentUid: group,
        roleUid: "legacy.invite",
        codeHash: "hash",
        expirationTime: T0,
        createTime: T0,
        updateTime: T0,
      });
      await db.insert(schema.identityProviders).values({
        uid: newChildUid(group),
        parentUid: group,
        name: "idp",
        oidcIssuer: "https://issuer.example",
        oidcClientId: "client",
        defaultRoleUid: "legacy.idp",
        createTime: T0,
        updateTime: T0,
      });
    });
    await start(async ({ db, builtInRoles }) => {
      expect({ ...builtInRoles, kept: sorted(builtInRoles.kept) }).toEqual({ written: [], removed: ["legacy.free"], kept: referenced });
      expect((await builtInRows(db)).map((r) => r.uid)).toEqual(sorted([...catalogue.map((r) => r.uid), ...referenced]));
      // Once nothing refers to them any more, the next start deletes them.
      await db.delete(schema.roleBindings);
      await db.delete(schema.rootRoleBindings);
      await db.delete(schema.groupInvites);
      await db.delete(schema.identityProviders);
    });
    await start(async ({ db, builtInRoles }) => {
      expect({ ...builtInRoles, removed: sorted(builtInRoles.removed) }).toEqual({ written: [], removed: referenced, kept: [] });
      expect(content(await builtInRows(db))).toEqual(catalogue);
      expect(await db.select({ uid: schema.roles.uid }).from(schema.roles).where(eq(schema.roles.name, "viewer"))).toHaveLength(2);
    });
  });
});
