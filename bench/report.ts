// Figures, percentiles and the printed report (per-run lines, checks, the
// markdown summary).

/** One measured run. Latencies in ms, taken per request by the bench (not autocannon's whole-ms histogram). */
export interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** Successful requests in the measured window. */
  requests: number;
  /** Failed requests: connection errors, non-2xx, non-OK gRPC status. */
  errors: number;
  seconds: number;
  /** The server's own CPU time per successful request (its database's CPU not included). */
  cpuUsPerRequest?: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

export function summarise(latenciesMs: ArrayLike<number>, errors: number, seconds: number): Figures {
  const sorted = Float64Array.from(latenciesMs).sort();
  return {
    rps: sorted.length / seconds,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    requests: sorted.length,
    errors,
    seconds,
  };
}

export const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(v < 10 ? 2 : 1) : "–");
export const rate = (v: number): string => (Number.isFinite(v) ? Math.round(v).toString() : "–");

export function describe(title: string, f: Figures, load: string): string {
  const cpu =
    f.cpuUsPerRequest === undefined || !Number.isFinite(f.cpuUsPerRequest) ? "" : `, server CPU ${Math.round(f.cpuUsPerRequest)} µs/req`;
  const errors = f.errors ? `, ${f.errors} ERRORS` : "";
  return `  ${title.padEnd(46)} ${rate(f.rps).padStart(6)} req/s  p50 ${ms(f.p50).padStart(6)} ms  p99 ${ms(f.p99).padStart(6)} ms  (${load}, ${f.seconds.toFixed(1)} s${cpu}${errors})`;
}

export interface Check {
  name: string;
  value: string;
  target: string;
  /** undefined: reported without a target. */
  pass: boolean | undefined;
}

export function verdict(pass: boolean | undefined): string {
  return pass === undefined ? "–" : pass ? "PASS" : "FAIL";
}

export function ratio(a: Figures | undefined, b: Figures | undefined): number {
  return a && b && b.rps > 0 ? a.rps / b.rps : NaN;
}

export interface Row {
  name: string;
  postgres?: Figures | undefined;
  pglite?: Figures | undefined;
}

const cells = (f: Figures | undefined): string[] =>
  f ? [rate(f.rps), ms(f.p50), ms(f.p99), f.cpuUsPerRequest === undefined ? "–" : rate(f.cpuUsPerRequest)] : ["–", "–", "–", "–"];

export function markdownTables(rows: Row[], checks: Check[], pgliteChecks: Check[], notes: string[]): string {
  const out: string[] = [];
  out.push("| Run | PG req/s | PG p50 ms | PG p99 ms | PG CPU µs/req | PGlite req/s | PGlite p50 ms | PGlite p99 ms | PGlite CPU µs/req |");
  out.push("|---|--:|--:|--:|--:|--:|--:|--:|--:|");
  // A run of a back-end the bench left out (BENCH_STORES) is not a row.
  for (const r of rows) if (r.postgres || r.pglite) out.push(`| ${r.name} | ${[...cells(r.postgres), ...cells(r.pglite)].join(" | ")} |`);
  for (const [store, list] of [
    ["PostgreSQL", checks],
    ["PGlite", pgliteChecks],
  ] as const) {
    if (!list.length) continue;
    out.push("");
    out.push(`| Check (${store}) | Value | Target | Result |`);
    out.push("|---|--:|--:|:-:|");
    for (const c of list) out.push(`| ${c.name} | ${c.value} | ${c.target} | ${verdict(c.pass)} |`);
  }
  if (notes.length) {
    out.push("");
    for (const n of notes) out.push(`- ${n}`);
  }
  return out.join("\n");
}
