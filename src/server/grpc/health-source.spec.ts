import { describe, expect, it } from "vitest";
import { SharedStatusReader, type HealthSource, type ServingStatus } from "./health-source.js";

function deferredSource(): HealthSource & { calls: number; resolve(s: ServingStatus): void } {
  let resolvers: ((s: ServingStatus) => void)[] = [];
  return {
    calls: 0,
    status() {
      this.calls++;
      return new Promise<ServingStatus>((r) => resolvers.push(r));
    },
    resolve(s) {
      const pending = resolvers;
      resolvers = [];
      for (const r of pending) r(s);
    },
  };
}

describe("SharedStatusReader", () => {
  it("shares one probe among concurrent readers", async () => {
    const source = deferredSource();
    const reader = new SharedStatusReader(source, 0);
    const reads = [reader.read(), reader.read(), reader.readFresh()];
    source.resolve("SERVING");
    expect(await Promise.all(reads)).toEqual(["SERVING", "SERVING", "SERVING"]);
    expect(source.calls).toBe(1);
  });

  it("reuses a recent result for read but not for readFresh", async () => {
    const source = deferredSource();
    const reader = new SharedStatusReader(source, 60_000);
    const first = reader.read();
    source.resolve("SERVING");
    await first;
    expect(await reader.read()).toBe("SERVING");
    expect(source.calls).toBe(1);
    const fresh = reader.readFresh();
    source.resolve("NOT_SERVING");
    expect(await fresh).toBe("NOT_SERVING");
    expect(source.calls).toBe(2);
  });

  it("reads a failing source as NOT_SERVING", async () => {
    const reader = new SharedStatusReader({ status: () => Promise.reject(new Error("down")) }, 0);
    expect(await reader.read()).toBe("NOT_SERVING");
  });
});
