import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { takePgliteStore } from "../../test/support/store-pool.js";
import { openDatabase, reconnectDelaySeconds } from "./client.js";
import { LOCK_FILE } from "./directory-lock.js";

describe("reconnectDelaySeconds (postgres.js backoff)", () => {
  it("starts short, grows, and never exceeds two seconds, however many attempts failed", () => {
    for (let i = 0; i < 200; i++) {
      expect(reconnectDelaySeconds(0)).toBeLessThanOrEqual(0.05);
      expect(reconnectDelaySeconds(1)).toBeGreaterThanOrEqual(0.05);
      for (const failures of [5, 10, 50, 1_000]) {
        const d = reconnectDelaySeconds(failures);
        expect(d).toBeGreaterThanOrEqual(0.5);
        expect(d).toBeLessThanOrEqual(2);
      }
    }
  });
});

describe("openDatabase on a PGlite the caller opened", () => {
  it("migrates it and writes the built-in roles; close() leaves it open and stops the handle's listeners", async () => {
    // An emptied store from the tests' pool (test/support/store-pool.ts): open, with no roles.
    const store = await takePgliteStore();
    const pglite = store.store;
    try {
      const handle = await openDatabase({ pgliteDir: "memory://", pglite });
      expect(handle.kind).toBe("pglite");
      expect(handle.builtInRoles.written).toContain("owner");
      const heard: string[] = [];
      await handle.listen(
        "platform_test",
        (payload) => heard.push(payload),
        () => {},
      );
      await pglite.query("select pg_notify('platform_test', 'before')");
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(heard).toEqual(["before"]);

      await handle.close();
      expect(
        (await pglite.query<{ n: number }>("select count(*)::int as n from roles where parent_uid is null")).rows[0]?.n,
      ).toBeGreaterThan(0);
      await pglite.query("select pg_notify('platform_test', 'after')");
      await new Promise((resolve) => setTimeout(resolve, 0));
      expect(heard).toEqual(["before"]);
    } finally {
      store.release();
    }
  });

  it("refuses a PGlite given with a PostgreSQL URL", async () => {
    const store = await takePgliteStore();
    try {
      await expect(
        openDatabase({ databaseUrl: "postgres://127.0.0.1:1/none", pgliteDir: "memory://", pglite: store.store }),
      ).rejects.toThrow(/one or the other/);
    } finally {
      store.release();
    }
  });
});

describe("openDatabase on a new PGlite data directory", () => {
  it("makes the cluster in the directory it locks, names its holder there, and opens it again after close", async () => {
    // No template: what `npm start` does on a first run without the build's (PGlite makes a cluster
    // only in an empty directory). With one: pglite-template.spec.ts.
    const parent = await mkdtemp(join(tmpdir(), "platform-new-store-"));
    const dir = join(parent, "pglite");
    try {
      const first = await openDatabase({ pgliteDir: dir, pgliteTemplate: null });
      first.describeHolder({ port: 4321 });
      expect(JSON.parse(await readFile(join(dir, LOCK_FILE), "utf8"))).toMatchObject({ pid: process.pid, port: 4321 });
      await expect(openDatabase({ pgliteDir: dir })).rejects.toThrow(/in use by process \d+ \(serving on port 4321\)/);
      await first.close();
      const again = await openDatabase({ pgliteDir: dir });
      await again.ping();
      await again.close();
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  }, 60_000);
});
