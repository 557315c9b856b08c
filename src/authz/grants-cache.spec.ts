import { describe, expect, it } from "vitest";
import { Grants } from "./grants.js";
import { GrantsCache } from "./grants-cache.js";

function setup() {
  let now = 0;
  const loads: string[] = [];
  let releases: (() => void)[] = [];
  let hold = false;
  const cache = new GrantsCache(
    async (uid) => {
      loads.push(uid);
      if (hold) await new Promise<void>((r) => releases.push(r));
      return new Grants([{ groupUid: uid, capabilities: new Set([`load-${loads.length}`]) }]);
    },
    () => new Date(now),
  );
  return {
    cache,
    loads,
    advance: (ms: number) => (now += ms),
    holdNextLoad: () => (hold = true),
    /** Lets every held load finish. */
    finishLoad: () => {
      hold = false;
      for (const release of releases) release();
      releases = [];
    },
  };
}

describe("GrantsCache", () => {
  it("loads once per identity until invalidated", async () => {
    const t = setup();
    await t.cache.get("a");
    await t.cache.get("a");
    await t.cache.get("b");
    expect(t.loads).toEqual(["a", "b"]);
    t.cache.invalidate();
    await t.cache.get("a");
    expect(t.loads).toEqual(["a", "b", "a"]);
  });

  it("re-reads after a minute even without a notification", async () => {
    const t = setup();
    await t.cache.get("a");
    t.advance(59_000);
    await t.cache.get("a");
    t.advance(2_000);
    await t.cache.get("a");
    expect(t.loads).toEqual(["a", "a"]);
  });

  it("does not keep a load that raced an invalidation", async () => {
    const t = setup();
    t.holdNextLoad();
    const inflight = t.cache.get("a");
    t.cache.invalidate();
    t.finishLoad();
    expect((await inflight).holdsAnywhere("load-1")).toBe(true);
    const next = await t.cache.get("a");
    expect(next.holdsAnywhere("load-2")).toBe(true);
    expect(t.loads).toEqual(["a", "a"]);
  });

  it("runs one load for callers of one identity that miss together, and a new one for those that come after a clear", async () => {
    const t = setup();
    t.holdNextLoad();
    const together = [t.cache.get("a"), t.cache.get("a"), t.cache.get("a")];
    expect(t.loads).toEqual(["a"]);
    // After a clear, the load under way may have read old grants: a new caller does not share it.
    t.cache.invalidate();
    const after = t.cache.get("a");
    expect(t.loads).toEqual(["a", "a"]);
    t.finishLoad();
    const [first, second, third] = await Promise.all(together);
    expect(second).toBe(first);
    expect(third).toBe(first);
    expect(await after).not.toBe(first);
    expect(await t.cache.get("a")).toBe(await after);
    expect(t.loads).toEqual(["a", "a"]);
  });

  it("lets every caller sharing a load see its failure, and the next caller load again", async () => {
    let fail = true;
    let loads = 0;
    const cache = new GrantsCache(
      async () => {
        loads++;
        if (fail) throw new Error("database away");
        return new Grants([]);
      },
      () => new Date(0),
    );
    const results = await Promise.allSettled([cache.get("a"), cache.get("a")]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(loads).toBe(1);
    fail = false;
    await cache.get("a");
    expect(loads).toBe(2);
  });
});
