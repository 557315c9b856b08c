// The cost curves of `npm run bench` (issue 31): the service's ListGroups (REST, page 50 +
// totalCount) and CreateGroup (REST, unique names) at 10k, 100k and 1M rows on PostgreSQL,
// where "rows" are the children of the one organization the list reads (what totalCount
// counts and what a create's sibling-name check searches), each with the "created" event a
// create through the API leaves in the events table. Creates should be flat in the row count.
// The list's exact totalCount is a count(*) over every match, which grows with the rows in any
// implementation (docs/design.md, "Lists"), so each point also measures the floor's list
// (bench/floor-server.ts, same database and concurrency): the service's share of the floor's
// pace is what should stay flat.
//
// One database grows between the points by bulk SQL (generate_series, each batch sorted by uid
// so every index is filled in order; 1M rows take about a minute on a busy 2-core machine), then
// VACUUM ANALYZE and a CHECKPOINT: statistics and the visibility map as a database of that size
// keeps them, and no checkpoint of the seed's WAL inside a measured window, so what grows with
// the rows is the service's cost and not the fixture's. At each point: the list, then the
// creates (under the same organization; the next point tops the children up to its count),
// each followed by a wait until the requests left in flight are done. The list runs at 8
// connections (not 32): at 1M a page takes long enough for 32 to time out.
//
// Env (read by bench/run.ts): BENCH_CURVES=0 skips the curves, BENCH_ONLY=curves runs only
// them, BENCH_CURVE_SECONDS the measured seconds per run (5; 2 with BENCH_QUICK).
import { randomBytes } from "node:crypto";
import { loadavg } from "node:os";
import postgres from "postgres";
import { httpLoad } from "./http-load.js";
import { readCpuMs } from "./processes.js";
import { describe, ms, rate, type Figures } from "./report.js";

export const CURVE_POINTS = [10_000, 100_000, 1_000_000] as const;

// The list's concurrency, at most: where a page takes a second or more, 32 connections' queue
// outlasts a short window (and autocannon's 10 s timeout), so nothing would be measured.
const LIST_CONNECTIONS = 8;
const TIMEOUT_SECONDS = 60;
/** A window with fewer answers than this is measured again, five times as long. */
const MIN_ANSWERS = 20;
/** How long the service's idle CPU is sampled (/proc counts it in 10 ms ticks). */
const IDLE_MS = 3_000;

/** The largest point's req/s at least this share of the smallest's counts as flat (within 1.5×). */
export const FLAT_MIN_RATIO = 1 / 1.5;

export interface CurveService {
  base: string;
  headers: Record<string, string>;
  pid: number;
  /** The service's database, which the curve grows. */
  dbUrl: string;
  /** An organization the admin owns, with no children yet. */
  org: string;
  /** The floor server (bench/floor-server.ts) on the same database: its list at each point. */
  floorBase: string;
  floorPid: number;
}

export interface CurveLoad {
  seconds: number;
  warmupSeconds: number;
  connections: number;
  createClients: number;
  log: (line?: string) => void;
}

export interface CurvePoint {
  rows: number;
  /** Rows in `events` when the list was measured. */
  events: number;
  /** Time to grow to this point: inserts, VACUUM ANALYZE, CHECKPOINT. */
  seedMs: number;
  list: Figures;
  /** The floor's list (page 50 + count(*)) at the same point and concurrency. */
  floorList: Figures;
  create: Figures;
}

export interface CostCurve {
  points: CurvePoint[];
  /** EXPLAIN (ANALYZE, BUFFERS) of the list's two statements at the largest point. */
  plans: string[];
  ms: number;
  /** The 1-minute load average before and after. */
  load: [number, number];
  /**
   * The service's CPU while idle, ms per second: at 10 req/s, 10 ms/s of timers and GC is
   * 1,000 µs on every request's CPU figure, which is not the request's.
   */
  idleCpuMsPerS: number;
}

// The children and their "created" events in one statement, in uid order (the events' uids
// share the order: the time prefix is the same for the batch). The names are unique because
// the uids are; the data is the shape of a created event's, near enough in size.
const GROW = `with g as (
  insert into groups (uid, parent_uid, name, description, resource_limits, verified, create_time, update_time)
  select $1 || '/' || h, $1, 'child ' || h, 'bench fixture', '{}'::jsonb, false, now(), now()
  from (select substr(md5($2 || i::text), 1, 16) as h from generate_series(1, $3::int) as i) as x
  order by h
  returning uid, name, description, create_time
)
insert into events (uid, type, source, subject, actor, parent_uid, time, data)
select lpad(to_hex((extract(epoch from g.create_time) * 1000)::bigint), 12, '0') || right(g.uid, 16),
  'platform.iam.group.created.v1', 'http://bench', g.uid, '', g.uid, g.create_time,
  jsonb_build_object('after', jsonb_build_object('uid', g.uid, 'name', g.name, 'description', g.description,
    'resourceLimits', '{}'::jsonb, 'verified', false, 'createTime', g.create_time, 'updateTime', g.create_time))
from g order by g.uid`;

// What the List engine sends for `uidp.children_of` as an admin (who sees everything), written out.
const COUNT = "select count(*) from groups where parent_uid = $1";
const PAGE = "select * from groups where parent_uid = $1 order by uid limit 51";

const count = async (sql: postgres.Sql, text: string, params: string[]): Promise<number> =>
  Number((await sql.unsafe<{ n: string }[]>(text, params))[0]!.n);

const CHILDREN = "select count(*) as n from groups where parent_uid = $1";

/** Tops the org's children up to `rows`; resolves to how many it has then. */
async function growTo(sql: postgres.Sql, org: string, rows: number): Promise<number> {
  const have = await count(sql, CHILDREN, [org]);
  // A fresh salt per batch: the md5 of the same numbers again would repeat uids.
  if (rows > have) await sql.unsafe(GROW, [org, randomBytes(8).toString("hex"), rows - have]);
  await sql.unsafe("vacuum analyze groups, events");
  // Superuser or pg_checkpoint only; without it a checkpoint may land in a measured window.
  await sql.unsafe("checkpoint").catch(() => {});
  // Counted again: a create the last run left in flight may have landed after the first count.
  return count(sql, CHILDREN, [org]);
}

async function expectPage(svc: CurveService, total: number): Promise<void> {
  const r = await fetch(`${svc.base}/iam/v2beta1/groups?uidp.children_of=${svc.org}&page_size=50`, { headers: svc.headers });
  const body = (await r.json()) as { groups?: unknown[]; totalCount?: string | number };
  if (!r.ok || body.groups?.length !== 50 || Number(body.totalCount) !== total) {
    throw new Error(`cost curve ListGroups: expected 50 groups of ${total}, got ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
}

/** Grows `svc.org` through CURVE_POINTS, measuring the list and the creates at each. */
export async function measureCostCurves(svc: CurveService, load: CurveLoad): Promise<CostCurve> {
  const t0 = performance.now();
  const loadBefore = loadavg()[0]!;
  const sql = postgres(svc.dbUrl, { max: 1, onnotice: () => {} });
  const points: CurvePoint[] = [];
  const plans: string[] = [];
  const run = randomBytes(3).toString("hex");
  let n = 0;
  let idleCpuMsPerS = NaN;
  const createSpec = {
    url: `${svc.base}/iam/v2beta1/groups/${svc.org}`,
    method: "POST" as const,
    headers: svc.headers,
    body: JSON.stringify({ name: `curve ${run} first` }),
    next: () => ({ body: `{"name":"curve ${run} ${n++}"}` }),
    connections: load.createClients,
    seconds: load.seconds,
    warmupSeconds: Math.min(1, load.warmupSeconds),
    serverPid: svc.pid,
    timeoutSeconds: TIMEOUT_SECONDS,
  };
  try {
    // The service is fresh: without this the first point's creates ran half in the interpreter
    // (their CPU per create came out half as much again as the next point's). Counted in the 10k.
    await httpLoad({ ...createSpec, seconds: Math.max(1, load.warmupSeconds), warmupSeconds: 0 });
    await drain(sql);
    const idle0 = readCpuMs(svc.pid);
    await new Promise((r) => setTimeout(r, IDLE_MS));
    idleCpuMsPerS = ((readCpuMs(svc.pid) - idle0) * 1000) / IDLE_MS;
    for (const rows of CURVE_POINTS) {
      const s0 = performance.now();
      const children = await growTo(sql, svc.org, rows);
      const seedMs = performance.now() - s0;
      const events = await count(sql, "select count(*) as n from events", []);
      load.log(
        `  ${children.toLocaleString("en")} children (${events.toLocaleString("en")} events): grown in ${(seedMs / 1000).toFixed(1)} s`,
      );
      await expectPage(svc, children);
      const listSpec = {
        url: `${svc.base}/iam/v2beta1/groups?uidp.children_of=${svc.org}&page_size=50`,
        headers: svc.headers,
        connections: Math.min(load.connections, LIST_CONNECTIONS),
        seconds: load.seconds,
        warmupSeconds: load.warmupSeconds,
        serverPid: svc.pid,
        timeoutSeconds: TIMEOUT_SECONDS,
      };
      let list = await httpLoad(listSpec);
      if (list.requests < MIN_ANSWERS) {
        load.log(
          `    (ListGroups @ ${short(rows)}: ${list.requests} answers in ${list.seconds.toFixed(1)} s; measured again over ${5 * load.seconds} s)`,
        );
        await drain(sql);
        list = await httpLoad({ ...listSpec, seconds: 5 * load.seconds, warmupSeconds: 0 });
      }
      load.log(describe(`  ListGroups page 50 + totalCount @ ${short(rows)}`, list, `${listSpec.connections} conns`));
      await drain(sql);
      // The floor pays the same exact count: what grows in both is the database's count(*).
      const floorSpec = { ...listSpec, url: `${svc.floorBase}/list?parent=${svc.org}`, headers: {}, serverPid: svc.floorPid };
      let floorList = await httpLoad(floorSpec);
      if (floorList.requests < MIN_ANSWERS) {
        await drain(sql);
        floorList = await httpLoad({ ...floorSpec, seconds: 5 * load.seconds, warmupSeconds: 0 });
      }
      load.log(describe(`  floor list @ ${short(rows)}`, floorList, `${listSpec.connections} conns`));
      await drain(sql);
      // The plans while the table is as the list saw it (the creates add to it).
      if (rows === CURVE_POINTS[CURVE_POINTS.length - 1]) plans.push(...(await explain(sql, svc.org)));
      const create = await httpLoad(createSpec);
      load.log(describe(`  CreateGroup under the org @ ${short(rows)}`, create, `${load.createClients} clients`));
      await drain(sql);
      points.push({ rows, events, seedMs, list, floorList, create });
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
  return { points, plans, ms: performance.now() - t0, load: [loadBefore, loadavg()[0]!], idleCpuMsPerS };
}

/**
 * Waits until no statement of another session runs in this database: autocannon stops at the
 * window's end, but the requests it left in flight go on in the service and would run into the
 * next window (at 1M, a count each).
 */
async function drain(sql: postgres.Sql): Promise<void> {
  const busy = `select count(*) as n from pg_stat_activity
    where datname = current_database() and state = 'active' and pid <> pg_backend_pid()`;
  for (let i = 0; i < 600 && (await count(sql, busy, [])) > 0; i++) await new Promise((r) => setTimeout(r, 100));
}

async function explain(sql: postgres.Sql, org: string): Promise<string[]> {
  const out: string[] = [];
  for (const [label, text] of [
    ["count", COUNT],
    ["page", PAGE],
  ] as const) {
    const plan = await sql.unsafe<{ "QUERY PLAN": string }[]>(`explain (analyze, buffers) ${text}`, [org]);
    out.push(`${label}: ${text}`, ...plan.map((r) => `    ${r["QUERY PLAN"]}`));
  }
  return out;
}

const short = (rows: number): string => (rows >= 1_000_000 ? `${rows / 1_000_000}M` : `${rows / 1_000}k`);

const times = (a: number, b: number): string => (Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : "–");

/** "flat" when the largest point keeps FLAT_MIN_RATIO of the smallest's req/s. */
export function flatness(curve: CostCurve, pick: (p: CurvePoint) => Figures): { ratio: number; flat: boolean } {
  const first = pick(curve.points[0]!);
  const last = pick(curve.points[curve.points.length - 1]!);
  const ratio = first.rps > 0 ? last.rps / first.rps : NaN;
  return { ratio, flat: ratio >= FLAT_MIN_RATIO };
}

/** The curves as a markdown table, the largest / smallest ratios and the verdicts. */
export function curveSummary(curve: CostCurve): string {
  const cells = (f: Figures) => [rate(f.rps), ms(f.p50), ms(f.p99), f.cpuUsPerRequest === undefined ? "–" : rate(f.cpuUsPerRequest)];
  const out = [
    "| Cost curve (PostgreSQL): children of the org | List req/s | p50 ms | p99 ms | CPU µs/req | Floor list req/s | List / floor | Create req/s | p50 ms | p99 ms | CPU µs/req |",
    "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
  ];
  for (const p of curve.points) {
    const row = [...cells(p.list), rate(p.floorList.rps), times(p.list.rps, p.floorList.rps), ...cells(p.create)];
    out.push(`| ${p.rows.toLocaleString("en")} | ${row.join(" | ")} |`);
  }
  const first = curve.points[0];
  const last = curve.points[curve.points.length - 1];
  if (!first || !last) return out.join("\n");
  const ratios = (a: Figures, b: Figures) => [
    times(a.rps, b.rps),
    times(a.p50, b.p50),
    times(a.p99, b.p99),
    times(a.cpuUsPerRequest ?? NaN, b.cpuUsPerRequest ?? NaN),
  ];
  out.push(
    `| ${short(last.rows)} / ${short(first.rows)} | ${[...ratios(last.list, first.list), times(last.floorList.rps, first.floorList.rps), "", ...ratios(last.create, first.create)].join(" | ")} |`,
  );
  out.push("");
  for (const [name, pick] of [
    ["ListGroups page 50 + totalCount", (p: CurvePoint) => p.list],
    ["CreateGroup", (p: CurvePoint) => p.create],
  ] as const) {
    const f = flatness(curve, pick);
    out.push(
      `- ${name}, req/s at ${short(last.rows)} / at ${short(first.rows)}: ${times(f.ratio, 1)} → ${f.flat ? "flat" : "NOT flat"} (flat: ≥ ${FLAT_MIN_RATIO.toFixed(2)}×, within 1.5×)`,
    );
  }
  // What the service adds to the database's work: flat when its share of the floor's pace is.
  const share = (p: CurvePoint) => p.list.rps / p.floorList.rps;
  const shareRatio = share(last) / share(first);
  out.push(
    `- ListGroups / floor list at ${short(last.rows)} / at ${short(first.rows)}: ${times(shareRatio, 1)} → ${shareRatio >= FLAT_MIN_RATIO ? "flat" : "NOT flat"}: the service's own cost ${shareRatio >= FLAT_MIN_RATIO ? "does not grow" : "grows"} with the rows beyond the exact count(*) the floor pays too`,
  );
  const seed = curve.points.reduce((s, p) => s + p.seedMs, 0);
  out.push(
    `- The curves took ${(curve.ms / 1000).toFixed(0)} s, ${(seed / 1000).toFixed(0)} s of it growing the database (inserts, VACUUM ANALYZE, CHECKPOINT); ${last.events.toLocaleString("en")} events at ${short(last.rows)}; 1-min load average ${curve.load[0].toFixed(2)} before, ${curve.load[1].toFixed(2)} after. Server CPU excludes PostgreSQL's, and includes the service's idle CPU, ${curve.idleCpuMsPerS.toFixed(1)} ms/s (${rate((curve.idleCpuMsPerS * 1000) / Math.max(last.list.rps, 1e-9))} µs of each list request's at ${short(last.rows)}).`,
  );
  return out.join("\n");
}
