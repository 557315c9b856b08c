import { describe, expect, it } from "vitest";
import { Grants } from "./grants.js";
import { GrantsCache } from "./grants-cache.js";

function setup() {
  let now = 0;
  const loads: string[] = [];
  let release: (() => void) | undefined;
  let hold = false;
  const cache = new GrantsCache(
    async (uid) => {
      loads.push(uid);
      if (hold) await new Promise<void>((r) => (release = r));
      return new Grants([{ groupUid: uid, capabilities: new Set([`load-${loads.length}`]) }]);
    },
    () => new Date(now),
  );
  return {
    cache,
    loads,
    advance: (ms: number) => (now += ms),
    holdNextLoad: () => (hold = true),
    finishLoad: () => {
      hold = false;
      release?.();
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
});
