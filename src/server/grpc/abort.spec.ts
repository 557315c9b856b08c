import { describe, expect, it } from "vitest";
import { linkSignals, sleep, unlessAborted, untilAborted } from "./abort.js";

describe("linkSignals", () => {
  it("aborts when any input aborts, and not after dispose", () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkSignals(a.signal, b.signal);
    expect(linked.signal.aborted).toBe(false);
    b.abort();
    expect(linked.signal.aborted).toBe(true);

    const c = new AbortController();
    const disposed = linkSignals(c.signal);
    disposed.dispose();
    c.abort();
    expect(disposed.signal.aborted).toBe(false);
  });

  it("starts aborted when an input already is", () => {
    expect(linkSignals(new AbortController().signal, AbortSignal.abort()).signal.aborted).toBe(true);
  });
});

describe("sleep, unlessAborted, untilAborted", () => {
  it("return early on abort", async () => {
    const ac = new AbortController();
    const started = Date.now();
    const slept = sleep(10_000, ac.signal);
    const raced = unlessAborted(new Promise<string>(() => {}), ac.signal);
    const waited = untilAborted(ac.signal);
    ac.abort();
    await slept;
    expect(await raced).toBeUndefined();
    await waited;
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("pass a settled promise through", async () => {
    const signal = new AbortController().signal;
    expect(await unlessAborted(Promise.resolve(7), signal)).toBe(7);
    await expect(unlessAborted(Promise.reject(new Error("x")), signal)).rejects.toThrow("x");
    await sleep(1, signal);
  });
});
