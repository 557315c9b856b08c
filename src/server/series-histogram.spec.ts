import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { SeriesHistogram } from "./series-histogram.js";

const BUCKETS = [0.001, 0.01, 0.1, 1];

describe("SeriesHistogram", () => {
  it("renders exactly what prom-client's Histogram renders for the same observations", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const a = new SeriesHistogram("h_seconds", "help text", ["rpc", "code"], BUCKETS, ours);
    const b = new Histogram({ name: "h_seconds", help: "help text", labelNames: ["rpc", "code"], buckets: BUCKETS, registers: [theirs] });
    const seriesA = [a.labels({ rpc: "x/Get", code: "OK" }), a.labels({ rpc: "y/List", code: "NOT_FOUND" })];
    const seriesB = [b.labels({ rpc: "x/Get", code: "OK" }), b.labels({ rpc: "y/List", code: "NOT_FOUND" })];
    // On a bound, between bounds, past the last one, zero.
    const values = [0.001, 0.0005, 0.05, 2, 0, 1, 0.01, 7.5];
    values.forEach((v, i) => {
      seriesA[i % 2]!.observe(v);
      seriesB[i % 2]!.observe(v);
    });
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('h_seconds_bucket{le="+Inf",rpc="y/List",code="NOT_FOUND"} 4');
  });

  it("shows a series only once observed, and skips values that are not finite", async () => {
    const registry = new Registry();
    const h = new SeriesHistogram("q_seconds", "help", ["outcome"], BUCKETS, registry);
    const ok = h.labels({ outcome: "ok" });
    h.labels({ outcome: "error" });
    expect(await registry.metrics()).not.toContain("q_seconds_count");
    ok.observe(Number.NaN);
    ok.observe(Number.POSITIVE_INFINITY);
    ok.observe(0.002);
    const text = await registry.metrics();
    expect(text).toMatch(/^q_seconds_count\{outcome="ok"\} 1$/m);
    expect(text).toMatch(/^q_seconds_bucket\{le="0.001",outcome="ok"\} 0$/m);
    expect(text).toMatch(/^q_seconds_bucket\{le="0.01",outcome="ok"\} 1$/m);
    expect(text).not.toContain('outcome="error"');
  });

  it("gives one series per label values, however often asked, and zeroes them on the registry's reset", async () => {
    const registry = new Registry();
    const h = new SeriesHistogram("r_seconds", "help", ["outcome"], BUCKETS, registry);
    h.labels({ outcome: "ok" }).observe(0.5);
    h.labels({ outcome: "ok" }).observe(0.05);
    expect((await registry.metrics()).match(/^r_seconds_count\{outcome="ok"\} (\d+)$/m)?.[1]).toBe("2");
    registry.resetMetrics();
    expect(await registry.metrics()).not.toContain("r_seconds_count");
    h.labels({ outcome: "ok" }).observe(0.05);
    expect(await registry.metrics()).toMatch(/^r_seconds_count\{outcome="ok"\} 1$/m);
  });

  it("refuses buckets that do not increase", () => {
    expect(() => new SeriesHistogram("bad", "help", [], [0.1, 0.1], new Registry())).toThrow(/increase/);
  });
});
