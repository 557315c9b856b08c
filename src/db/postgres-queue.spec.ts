import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it, vi } from "vitest";

// postgres.js's queue (its pools of open, busy and full connections, and waiting queries), as
// patches/postgres+3.4.9.patch leaves it: docs/design.md, "The PostgreSQL pool".
interface Queue<T> {
  readonly length: number;
  push(x: T): T;
  shift(): T | undefined;
  remove(x: T): T | null;
}
type QueueFactory = <T>(initial?: T[]) => Queue<T>;

const require = createRequire(import.meta.url);
// The package's CommonJS entry is cjs/src/index.js; its ES module twin is src/.
const packageRoot = join(dirname(require.resolve("postgres")), "..", "..");
const copies: [string, () => Promise<QueueFactory>][] = [
  [
    "ES module",
    async () => ((await import(pathToFileURL(join(packageRoot, "src", "queue.js")).href)) as { default: QueueFactory }).default,
  ],
  ["CommonJS", async () => require(join(packageRoot, "cjs", "src", "queue.js")) as QueueFactory],
];

describe.each(copies)("postgres.js's queue (%s)", (_, load) => {
  it("does not grow by a slot per shift when it is never emptied, as the busy pool under load, and removes only live entries", async () => {
    const Queue = await load();
    const q = Queue<{ id: number }>();
    const conns = [{ id: 0 }, { id: 1 }, { id: 2 }];
    for (const c of conns) q.push(c);
    // What a pool does with a busy connection when a query finds no idle one: takes the first,
    // "moves" it (a remove that finds nothing: it was shifted), and puts it back at the end.
    const scanned: number[] = [];
    const indexOf = Array.prototype.indexOf;
    const spy = vi.spyOn(Array.prototype, "indexOf").mockImplementation(function (this: unknown[], ...args: [unknown, number?]) {
      scanned.push(this.length - (args[1] ?? 0));
      return indexOf.apply(this, args);
    });
    let found = 0;
    try {
      for (let i = 0; i < 10_000; i++) {
        const c = q.shift()!;
        if (q.remove(c) !== null) found++;
        q.push(c);
      }
    } finally {
      spy.mockRestore();
    }
    expect(found).toBe(0);
    expect(q.length).toBe(3);
    // Unpatched, the last removes scanned 10,000 spent slots; each scans at most the live entries
    // plus the spent ones not dropped yet (fewer than the live ones, or 32).
    expect(scanned).toHaveLength(10_000);
    expect(Math.max(...scanned)).toBeLessThan(40);
    // Still first in, first out, and a live entry is found and removed.
    const order = [q.shift()!, q.shift()!, q.shift()!].map((c) => c.id);
    expect(order).toEqual([1, 2, 0]);
    expect(q.length).toBe(0);
    for (const c of conns) q.push(c);
    expect(q.remove(conns[1]!)).toBe(conns[1]);
    expect(q.remove({ id: 9 })).toBeNull();
    expect([q.shift()!.id, q.shift()!.id, q.shift()]).toEqual([0, 2, undefined]);
  });
});
