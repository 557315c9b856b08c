import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { QueryObserver } from "../db/query-observer.js";
import { codeName } from "../errors/index.js";
import type { AccessRecord } from "./access-log.js";
import { type HistogramSeries, SeriesHistogram } from "./series-histogram.js";

/**
 * What `/metrics` shows, in Prometheus' text format (docs/operations.md, "Health, metrics and logs"):
 * requests by RPC, code and HTTP status with their latency, database
 * queries with theirs and how many are in flight against the pool's size,
 * the grants cache's hits and misses, token exchanges and registry tokens by outcome, open event streams, log lines
 * dropped, and the process
 * (CPU, memory, event-loop lag, GC). Labels come from closed sets (RPC
 * names, codes), never from request data, so their number stays bounded.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requestSeconds: SeriesHistogram<"rpc" | "code" | "status">;
  /** Counted here and shown at scrape time: a prom-client counter hashes its labels on every inc. */
  private readonly grantsLookupsSeen = { hit: 0, miss: 0 };
  private readonly tokenExchanges: Counter<"outcome">;
  private readonly registryTokens: Counter<"outcome">;
  private readonly requestSeries = new Map<string, HistogramSeries>();
  private readonly querySeconds: SeriesHistogram<"outcome">;
  /** Kept as a number and shown at scrape time, as the grants lookups are. */
  private queriesInFlightNow = 0;
  private readonly poolSize: Gauge;

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "platform_" });
    this.requestSeconds = new SeriesHistogram(
      "platform_request_duration_seconds",
      "Requests by RPC (empty for plain HTTP routes), RPC status code and HTTP status, and how long they took.",
      ["rpc", "code", "status"],
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      this.registry,
    );
    this.querySeconds = new SeriesHistogram(
      "platform_db_query_duration_seconds",
      "Database queries the application ran, by outcome (ok or error), and how long each took from being sent to its answer, waiting for a pool connection included.",
      ["outcome"],
      [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      this.registry,
    );
    const inFlight = () => this.queriesInFlightNow;
    new Gauge({
      name: "platform_db_queries_in_flight",
      help: "Database queries sent and not yet answered; above platform_db_pool_size, queries wait for a connection.",
      registers: [this.registry],
      collect() {
        this.set(inFlight());
      },
    });
    this.poolSize = new Gauge({
      name: "platform_db_pool_size",
      help: "Connections this replica may open to the database (1 for embedded PGlite).",
      registers: [this.registry],
    });
    const lookups = this.grantsLookupsSeen;
    new Counter({
      name: "platform_grants_cache_lookups_total",
      help: "Lookups of callers' grants, by whether the per-replica cache had them (hit) or the database was asked (miss).",
      labelNames: ["result"],
      registers: [this.registry],
      collect() {
        this.reset();
        if (lookups.hit) this.inc({ result: "hit" }, lookups.hit);
        if (lookups.miss) this.inc({ result: "miss" }, lookups.miss);
      },
    });
    this.tokenExchanges = new Counter({
      name: "platform_token_exchanges_total",
      help: "Token exchanges (/sts/exchange) by outcome: issued, refused (401), invalid (400) or limited (429: a rate limit or the organization's outbound budget).",
      labelNames: ["outcome"],
      registers: [this.registry],
    });
    this.registryTokens = new Counter({
      name: "platform_registry_tokens_total",
      help: "Registry token requests (/registry/token) by outcome: issued, refused (401), invalid (400), limited (429) or error (500).",
      labelNames: ["outcome"],
      registers: [this.registry],
    });
  }

  /** Shows this replica's open WatchEvents streams, read when /metrics is scraped. */
  eventStreams(count: () => number): void {
    new Gauge({
      name: "platform_event_streams",
      help: "WatchEvents streams open on this replica (its hub reads each batch of new events once for all of them).",
      registers: [this.registry],
      collect() {
        this.set(count());
      },
    });
  }

  /** Shows the log lines the log destination dropped (logger.ts, LogDestination), read when /metrics is scraped. */
  logLinesDropped(count: () => number): void {
    let shown = 0;
    new Counter({
      name: "platform_log_lines_dropped_total",
      help: "Log lines dropped because the log destination failed (a closed pipe, a bad descriptor) or stayed full.",
      registers: [this.registry],
      collect() {
        const now = count();
        if (now > shown) this.inc(now - shown);
        shown = now;
      },
    });
  }

  request(record: AccessRecord, status: number, seconds: number): void {
    const key = `${record.rpc} ${record.code ?? ""} ${status}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      // One series per (RPC, code, status): looked up by one string rather than re-hashing the labels each time.
      series = this.requestSeconds.labels({
        rpc: record.rpc,
        code: record.code === undefined ? "" : codeName(record.code),
        status: String(status),
      });
      this.requestSeries.set(key, series);
    }
    series.observe(seconds);
  }

  /** Times each query (src/db/query-observer.ts). */
  queryObserver(): QueryObserver {
    const ok = this.querySeconds.labels({ outcome: "ok" });
    const failed = this.querySeconds.labels({ outcome: "error" });
    return () => {
      const started = performance.now();
      this.queriesInFlightNow++;
      return (success) => {
        this.queriesInFlightNow--;
        (success ? ok : failed).observe((performance.now() - started) / 1000);
      };
    };
  }

  databasePool(size: number): void {
    this.poolSize.set(size);
  }

  grantsLookup(hit: boolean): void {
    if (hit) this.grantsLookupsSeen.hit++;
    else this.grantsLookupsSeen.miss++;
  }

  tokenExchange(outcome: "issued" | "refused" | "invalid" | "limited"): void {
    this.tokenExchanges.inc({ outcome });
  }

  registryToken(outcome: "issued" | "refused" | "invalid" | "limited" | "error"): void {
    this.registryTokens.inc({ outcome });
  }
}
