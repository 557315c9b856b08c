import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { openDatabase } from "./client.js";
import { openPgliteDirectory } from "./pglite-store.js";
import { COPYING, makePgliteTemplate, seedFromTemplate, templateIsCurrent } from "./pglite-template.js";
import { PgliteThread } from "./pglite-thread.js";

// One template for the file: making it is an initdb and every migration, seconds of CPU.
let root = "";
let template = "";
let made: Awaited<ReturnType<typeof makePgliteTemplate>>;
let dirs = 0;
const newDir = (): string => {
  const dir = join(root, `store-${dirs++}`);
  mkdirSync(dir);
  return dir;
};

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "platform-pglite-template-"));
  template = join(root, "template");
  made = await makePgliteTemplate(template);
}, 120_000);

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("makePgliteTemplate", () => {
  it("makes a migrated cluster, stamped, without the pid file PGlite leaves, readable by all; a second call finds it current", async () => {
    expect(made).toBe("made");
    expect(templateIsCurrent(template)).toBe(true);
    expect(readFileSync(join(template, "made-by"), "utf8")).toMatch(/^pglite \d+\.\d+\.\d+\nmigrations [0-9a-f]{64}\n$/);
    const cluster = join(template, "cluster");
    expect(readFileSync(join(cluster, "PG_VERSION"), "utf8").trim()).toMatch(/^\d+$/);
    expect(existsSync(join(cluster, "postmaster.pid"))).toBe(false);
    expect(statSync(join(cluster, "PG_VERSION")).mode & 0o777).toBe(0o644);
    expect(statSync(join(cluster, "base")).mode & 0o777).toBe(0o755);
    // Nothing of the build is left beside it.
    expect(readdirSync(root).filter((n) => n.startsWith("template."))).toEqual([]);
    expect(await makePgliteTemplate(template)).toBe("current");
  });

  it("is not current once its stamp differs from what the installed PGlite and migrations make", () => {
    const other = join(root, "stale");
    mkdirSync(other);
    writeFileSync(join(other, "made-by"), "pglite 0.0.1\nmigrations 00\n");
    expect(templateIsCurrent(other)).toBe(false);
    expect(templateIsCurrent(join(root, "absent"))).toBe(false);
  });
});

describe("seedFromTemplate", () => {
  it("fills a new directory with the cluster, version file included, and no copy marker; PGlite opens it with the schema in place", async () => {
    const dir = newDir();
    expect(seedFromTemplate(dir, template)).toBe("copied");
    expect(existsSync(join(dir, "PG_VERSION"))).toBe(true);
    expect(existsSync(join(dir, COPYING))).toBe(false);
    const thread = await PgliteThread.open(dir);
    try {
      const applied = await thread.query<{ n: number }>("select count(*)::int as n from drizzle.__drizzle_migrations");
      const journal = JSON.parse(readFileSync(new URL("./migrations/meta/_journal.json", import.meta.url), "utf8")) as {
        entries: unknown[];
      };
      expect(applied.rows[0]!.n).toBe(journal.entries.length);
      // The schema, with no row in it: not even the built-in roles, which each open writes with its own times.
      expect((await thread.query<{ n: number }>("select count(*)::int as n from roles")).rows[0]!.n).toBe(0);
    } finally {
      await thread.close();
    }
  }, 60_000);

  it("leaves a directory that holds a cluster as it is, and drops the marker of a copy that ended after its version file", () => {
    const dir = newDir();
    writeFileSync(join(dir, "PG_VERSION"), "17\n");
    writeFileSync(join(dir, COPYING), "");
    expect(seedFromTemplate(dir, template)).toBe("existing");
    expect(readdirSync(dir)).toEqual(["PG_VERSION"]);
    expect(readFileSync(join(dir, "PG_VERSION"), "utf8")).toBe("17\n");
  });

  it("leaves a directory holding anything else alone: only a copy of its own is started again", () => {
    const dir = newDir();
    writeFileSync(join(dir, "notes.txt"), "mine");
    expect(seedFromTemplate(dir, template)).toBe("not-empty");
    expect(readdirSync(dir)).toEqual(["notes.txt"]);
  });

  it("starts a copy cut short again from the beginning", () => {
    const dir = newDir();
    writeFileSync(join(dir, COPYING), "");
    mkdirSync(join(dir, "base"));
    writeFileSync(join(dir, "base", "half-written"), "x");
    expect(seedFromTemplate(dir, template)).toBe("copied");
    expect(existsSync(join(dir, "base", "half-written"))).toBe(false);
    expect(existsSync(join(dir, "PG_VERSION"))).toBe(true);
    expect(existsSync(join(dir, COPYING))).toBe(false);
  });

  it("copies nothing from a template that is not current, or absent, and clears what a copy cut short left", () => {
    const stale = join(root, "stale-template");
    mkdirSync(join(stale, "cluster"), { recursive: true });
    writeFileSync(join(stale, "cluster", "PG_VERSION"), "17\n");
    writeFileSync(join(stale, "made-by"), "pglite 0.0.1\nmigrations 00\n");
    const dir = newDir();
    writeFileSync(join(dir, COPYING), "");
    expect(seedFromTemplate(dir, stale)).toBe("no-template");
    expect(readdirSync(dir)).toEqual([]);
    expect(seedFromTemplate(dir, join(root, "absent"))).toBe("no-template");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("leaves the directory empty, with a warning, when the copy fails, so PGlite makes the cluster itself", () => {
    // A current stamp over a cluster that is a file: the copy fails as an unreadable template would.
    const broken = join(root, "broken-template");
    mkdirSync(broken);
    writeFileSync(join(broken, "made-by"), readFileSync(join(template, "made-by")));
    writeFileSync(join(broken, "cluster"), "not a directory");
    const warn = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const dir = newDir();
    expect(seedFromTemplate(dir, broken)).toBe("copy-failed");
    expect(readdirSync(dir)).toEqual([]);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/could not be copied into .*PGlite makes the store itself/));
  });
});

describe("a new store from the template", () => {
  it("opens, migrated and with the built-in roles, through openDatabase; restarts on it find the cluster", async () => {
    const dir = join(root, "opened", "pglite");
    mkdirSync(join(root, "opened"));
    const first = await openDatabase({ pgliteDir: dir, pgliteTemplate: template });
    try {
      expect(first.builtInRoles.written.length).toBeGreaterThan(0);
      await first.ping();
    } finally {
      await first.close();
    }
    const again = await openDatabase({ pgliteDir: dir, pgliteTemplate: template });
    try {
      expect(again.builtInRoles.written).toEqual([]);
    } finally {
      await again.close();
    }
  }, 60_000);

  it("is taken over by openDatabase when opened early, which closes it and frees its directory at close", async () => {
    const dir = join(root, "early", "pglite");
    const handle = await openDatabase({ pgliteDir: dir, pgliteOpening: openPgliteDirectory(dir, template) });
    await handle.ping();
    await handle.close();
    // Freed: the next open takes the lock at once.
    const next = await openDatabase({ pgliteDir: dir, pgliteTemplate: template });
    await next.close();
  }, 60_000);

  it("reports an early open that failed, the directory in use, as openDatabase's own failure", async () => {
    const dir = join(root, "busy", "pglite");
    const holder = await openDatabase({ pgliteDir: dir, pgliteTemplate: template });
    try {
      await expect(openDatabase({ pgliteDir: dir, pgliteOpening: openPgliteDirectory(dir, template) })).rejects.toThrow(
        /is in use by process/,
      );
    } finally {
      await holder.close();
    }
  }, 60_000);
});
