import { Code } from "@connectrpc/connect";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import type { Database, DatabaseHandle } from "../db/index.js";
import { EventHub, type LiveBatch, type LiveEvents } from "./hub.js";

// The watchers' hub (docs/design.md, "Watching"): what it hands out when seqs become visible out of order.

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

/** An event row with the seq given (held by `group`), as if its transaction committed now. */
async function commit(seq: number, group: string | null = null, data: Record<string, unknown> = {}): Promise<void> {
  await handle.db.execute(sql`
    insert into events (uid, seq, type, source, subject, actor, parent_uid, time, data)
    values (${`e${seq}`}, ${seq}, 'platform.test.thing.created.v1', 'https://test', 's', '', ${group}, now(), ${JSON.stringify(data)}::jsonb)`);
}

/** The next batch the watcher gets, waking the hub until it comes. */
async function nextBatch(hub: EventHub, live: AsyncIterator<LiveBatch>): Promise<LiveBatch> {
  const batch = live.next();
  for (let i = 0; i < 100; i++) {
    hub.wake();
    const got = await Promise.race([batch, new Promise<undefined>((r) => setTimeout(() => r(undefined), 10))]);
    if (got) return got.value as LiveBatch;
  }
  throw new Error("no batch");
}

/** The seqs of the next batch the watcher gets. */
const next = async (hub: EventHub, live: AsyncIterator<LiveBatch>) => (await nextBatch(hub, live)).seqs;

/**
 * A database whose first statement (subscribe()'s max(seq), through `execute`) answers seq 0 and
 * whose every later one is a look (a select) that `look` answers.
 */
function fakeDb(look: () => Promise<unknown[]>): Database {
  const chain = { from: () => chain, where: () => chain, orderBy: () => chain, limit: look };
  return { execute: async () => [{ seq: 0 }], select: () => chain } as unknown as Database;
}

describe("EventHub", () => {
  it("hands out a seq that becomes visible after a higher one (a later commit), once, and nothing from before the start", async () => {
    await commit(1);
    const hub = new EventHub({
      db: handle.db,
      pollMs: 60_000,
      onError: (e) => {
        throw e;
      },
    });
    hub.start();
    const abort = new AbortController();
    const live: LiveEvents = await hub.subscribe(abort.signal);
    const it = live[Symbol.asyncIterator]();
    // 3 commits first; 2 was taken earlier and commits after it.
    await commit(3);
    expect(await next(hub, it)).toEqual([3]);
    await commit(2);
    expect(await next(hub, it)).toEqual([2]);
    await commit(4);
    expect(await next(hub, it)).toEqual([4]);
    abort.abort();
    expect(await it.next()).toEqual({ done: true, value: undefined });
    expect(hub.size).toBe(0);
    await hub.close();
  });

  it("reads a batch once for all its watchers, and hands each the rows its filter accepts with the seqs of all", async () => {
    let looks = 0;
    const db = new Proxy(handle.db, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (prop !== "select" || typeof value !== "function") return value;
        return (...args: unknown[]) => (looks++, (value as (...a: unknown[]) => unknown).apply(target, args));
      },
    });
    const hub = new EventHub({
      db,
      pollMs: 60_000,
      onError: (e) => {
        throw e;
      },
    });
    const abort = new AbortController();
    const ofGroup = (g: string) => hub.subscribe(abort.signal, (row) => row.parentUid === g);
    const watchers = [await ofGroup("a"), await ofGroup("b"), await ofGroup("c"), await hub.subscribe(abort.signal)].map((w) =>
      w[Symbol.asyncIterator](),
    );
    await commit(20, "a");
    await commit(21, "b");
    await commit(22, "a");
    // One wake-up: the three are committed, one look finds them all.
    hub.wake();
    const batches = await Promise.all(watchers.map((w) => w.next().then((r) => r.value as LiveBatch)));
    expect(batches.map((b) => b.seqs)).toEqual(batches.map(() => [20, 21, 22]));
    expect(batches.map((b) => b.rows.map((r) => r.uid))).toEqual([["e20", "e22"], ["e21"], [], ["e20", "e21", "e22"]]);
    expect(looks).toBe(1);
    abort.abort();
    await hub.close();
  });

  it("counts against each watcher's bytes cap only the rows it keeps: one past it with a batch untaken is ended with RESOURCE_EXHAUSTED, the others go on", async () => {
    const hub = new EventHub({
      db: handle.db,
      pollMs: 60_000,
      maxBufferedBytes: 4_000,
      onError: (e) => {
        throw e;
      },
    });
    const abort = new AbortController();
    const [big, small] = [
      await hub.subscribe(abort.signal, (row) => row.parentUid === "big"),
      await hub.subscribe(abort.signal, (row) => row.parentUid === "small"),
    ];
    await commit(30, "big", { pad: "x".repeat(5_000) });
    hub.wake();
    for (let i = 0; i < 100 && hub.buffered.rows === 0; i++) await new Promise((r) => setTimeout(r, 10));
    // Over the cap in the one batch it was just handed: it may be about to take it.
    expect(hub.buffered.rows).toBe(1);
    expect(hub.buffered.bytes).toBeGreaterThan(5_000);
    expect(hub.size).toBe(2);
    // A second batch, and the first still untaken.
    await commit(31, "small", { pad: "x".repeat(100) });
    hub.wake();
    for (let i = 0; i < 100 && hub.size === 2; i++) await new Promise((r) => setTimeout(r, 10));
    await expect(big[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: Code.ResourceExhausted,
      rawMessage: expect.stringMatching(/resume with after_id/),
    });
    expect(hub.size).toBe(1);
    const kept = hub.buffered;
    expect(kept.rows).toBe(1);
    // The small row's text (its data's JSON and its fields) and a fixed allowance for its object.
    expect(kept.bytes).toBeGreaterThan(100);
    expect(kept.bytes).toBeLessThan(1_000);
    expect(((await small[Symbol.asyncIterator]().next()).value as LiveBatch).rows.map((r) => r.uid)).toEqual(["e31"]);
    abort.abort();
    await hub.close();
  });

  it("close() ends every stream and waits for a lookup under way, so nothing queries once the server closes its database", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let lookups = 0;
    // Every look is held at the gate.
    const db = fakeDb(async () => (lookups++, await gate, []));
    const hub = new EventHub({
      db,
      pollMs: 60_000,
      onError: (e) => {
        throw e;
      },
    });
    const live = await hub.subscribe(new AbortController().signal);
    hub.wake();
    expect(lookups).toBe(1);
    let closed = false;
    const closing = hub.close().then(() => (closed = true));
    expect(await live[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
    await new Promise((r) => setTimeout(r, 20));
    expect(closed).toBe(false);
    release();
    await closing;
    expect(lookups).toBe(1);
  });

  it("after a failed look ignores wake-ups for a while (the database is away), and looks at once when resumed", async () => {
    let looks = 0;
    let failing = true;
    const db = fakeDb(async () => {
      looks++;
      if (failing) throw new Error("database away");
      return [];
    });
    const errors: unknown[] = [];
    const hub = new EventHub({ db, pollMs: 60_000, onError: (e) => errors.push(e) });
    await hub.subscribe(new AbortController().signal);
    const settle = () => new Promise((r) => setTimeout(r, 10));
    hub.wake();
    await settle();
    expect(looks).toBe(1);
    // Every NOTIFY and poll now: not one more look until the pause ends.
    for (let i = 0; i < 10; i++) hub.wake();
    await settle();
    expect(looks).toBe(1);
    expect(errors).toHaveLength(1);
    // The LISTEN is back: look now.
    failing = false;
    hub.resume();
    await settle();
    expect(looks).toBe(2);
    // A look that worked ends the pause: wake-ups look again.
    hub.wake();
    await settle();
    expect(looks).toBe(3);
    await hub.close();
  });

  it("does not pause after a look that failed while resume() was told the database is back", async () => {
    let looks = 0;
    let failFirst!: () => void;
    const db = fakeDb(async () => {
      looks++;
      // The first look is under way when the LISTEN comes back, and then fails.
      if (looks === 1) await new Promise<void>((resolve) => (failFirst = resolve)).then(() => Promise.reject(new Error("database away")));
      return [];
    });
    const hub = new EventHub({ db, pollMs: 60_000, onError: () => {} });
    await hub.subscribe(new AbortController().signal);
    hub.wake();
    await new Promise((r) => setTimeout(r, 10));
    hub.resume();
    failFirst();
    await new Promise((r) => setTimeout(r, 10));
    expect(looks).toBe(2);
    await hub.close();
  });
});
