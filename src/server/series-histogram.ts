import type { Registry } from "prom-client";

/** One labelled series of a SeriesHistogram: what a hot path holds and observes into. */
export interface HistogramSeries {
  observe(value: number): void;
}

interface SeriesState {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last slot is +Inf. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram whose series are resolved once and then observed with a bucket search and
 * three additions (docs/operations.md, "Health, metrics and logs"). prom-client's own Histogram
 * re-validates and re-hashes the labels of every observation, even through a child from
 * `labels()`. This one registers with prom-client's registry and reports in prom-client's shape
 * (the `_bucket` series with `le` first, then `_sum` and `_count`), so `/metrics` reads as before.
 * Its label values come from closed sets, as every series' do.
 */
export class SeriesHistogram<L extends string> {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly series = new Map<string, { state: SeriesState; handle: HistogramSeries }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i]! > buckets[i - 1]!)) throw new Error(`${name}: buckets must increase`);
    }
    registry.registerMetric(this as never);
  }

  /** The series for these label values, made on first use (callers keep it: this lookup is not for every observation). */
  labels(values: Record<L, string>): HistogramSeries {
    const labels: Record<string, string> = {};
    for (const name of this.labelNames) labels[name] = values[name];
    const key = JSON.stringify(Object.values(labels));
    const known = this.series.get(key);
    if (known) return known.handle;
    const state: SeriesState = { labels, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
    const bounds = this.buckets;
    const handle: HistogramSeries = {
      observe(value: number): void {
        if (!Number.isFinite(value)) return;
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        state.counts[i]!++;
        state.sum += value;
        state.count++;
      },
    };
    this.series.set(key, { state, handle });
    return handle;
  }

  /** Zeroes every series (prom-client's Registry.resetMetrics calls this on each metric). */
  reset(): void {
    for (const { state } of this.series.values()) {
      state.counts.fill(0);
      state.sum = 0;
      state.count = 0;
    }
  }

  /** What prom-client's registry renders (the same shape as its Histogram's). */
  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: object[] }> {
    const values: object[] = [];
    for (const { state: s } of this.series.values()) {
      if (s.count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i <= this.buckets.length; i++) {
        cumulative += s.counts[i]!;
        const le = i < this.buckets.length ? this.buckets[i]! : "+Inf";
        values.push({ labels: { le, ...s.labels }, value: cumulative, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}
