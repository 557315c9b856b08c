import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { codeName } from "../errors/index.js";
import type { AccessRecord } from "./access-log.js";

/**
 * What `/metrics` shows, in Prometheus' text format (README: Operations):
 * requests by RPC, code and HTTP status with their latency, the grants
 * cache's hits and misses, token exchanges by outcome, and the process
 * (CPU, memory, event-loop lag, GC). Labels come from closed sets (RPC
 * names, codes), never from request data, so their number stays bounded.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requestSeconds: Histogram<"rpc" | "code" | "status">;
  private readonly grantsLookups: Counter<"result">;
  private readonly tokenExchanges: Counter<"outcome">;
  private readonly requestSeries = new Map<string, { observe(value: number): void }>();

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: "platform_" });
    this.requestSeconds = new Histogram({
      name: "platform_request_duration_seconds",
      help: "Requests by RPC (empty for plain HTTP routes), RPC status code and HTTP status, and how long they took.",
      labelNames: ["rpc", "code", "status"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [this.registry],
    });
    this.grantsLookups = new Counter({
      name: "platform_grants_cache_lookups_total",
      help: "Lookups of callers' grants, by whether the per-replica cache had them (hit) or the database was asked (miss).",
      labelNames: ["result"],
      registers: [this.registry],
    });
    this.tokenExchanges = new Counter({
      name: "platform_token_exchanges_total",
      help: "Token exchanges (/sts/exchange) by outcome: issued, refused (401) or invalid (400).",
      labelNames: ["outcome"],
      registers: [this.registry],
    });
  }

  request(record: AccessRecord, status: number, seconds: number): void {
    const key = `${record.rpc} ${record.code ?? ""} ${status}`;
    let series = this.requestSeries.get(key);
    if (!series) {
      // One series per (RPC, code, status): looked up by one string rather than re-hashing the labels each time.
      series = this.requestSeconds.labels({ rpc: record.rpc, code: record.code === undefined ? "" : codeName(record.code), status: String(status) });
      this.requestSeries.set(key, series);
    }
    series.observe(seconds);
  }

  grantsLookup(hit: boolean): void {
    this.grantsLookups.inc({ result: hit ? "hit" : "miss" });
  }

  tokenExchange(outcome: "issued" | "refused" | "invalid"): void {
    this.tokenExchanges.inc({ outcome });
  }
}
