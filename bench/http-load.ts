// HTTP/1.1 load with autocannon: a warm-up, then the measured window, with a
// fresh path/body per request when `next` is given (random uids, unique names).
import autocannon from "autocannon";
import { readCpuMs } from "./processes.js";
import { summarise, type Figures } from "./report.js";

export interface HttpLoad {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** Per-request overrides; runs in the bench's event loop, so keep it cheap. */
  next?: () => { path?: string; body?: string };
  connections: number;
  seconds: number;
  warmupSeconds: number;
  /** The server's pid, for its CPU time over the measured window. */
  serverPid?: number | undefined;
  /** A response slower than this is an error (autocannon's default: 10). */
  timeoutSeconds?: number;
}

function once(spec: HttpLoad, seconds: number, latencies: number[] | undefined): Promise<autocannon.Result> {
  const next = spec.next;
  const opts: autocannon.Options = {
    url: spec.url,
    method: spec.method ?? "GET",
    headers: spec.headers ?? {},
    connections: spec.connections,
    duration: seconds,
    ...(spec.timeoutSeconds === undefined ? {} : { timeout: spec.timeoutSeconds }),
    ...(spec.body === undefined ? {} : { body: spec.body }),
    // autocannon hands setupRequest a fresh copy of the defaults each time, so mutating it is safe.
    ...(next ? { requests: [{ setupRequest: (req: autocannon.Request) => Object.assign(req, next()) }] } : {}),
  };
  return new Promise((resolve, reject) => {
    const instance = autocannon(opts, (err: Error | null, result: autocannon.Result) => (err ? reject(err) : resolve(result)));
    // Its own histogram keeps whole milliseconds; sub-ms p50s need the raw times.
    if (latencies) {
      instance.on("response", (_client, status: number, _bytes: number, responseTimeMs: number) => {
        if (status >= 200 && status < 300) latencies.push(responseTimeMs);
      });
    }
  });
}

export async function httpLoad(spec: HttpLoad): Promise<Figures> {
  if (spec.warmupSeconds > 0) await once(spec, spec.warmupSeconds, undefined);
  const latencies: number[] = [];
  const cpu0 = spec.serverPid ? readCpuMs(spec.serverPid) : NaN;
  const result = await once(spec, spec.seconds, latencies);
  const cpu1 = spec.serverPid ? readCpuMs(spec.serverPid) : NaN;
  // autocannon's duration is wall time of the window (rounded to 10 ms).
  const figures = summarise(latencies, result.errors + result.non2xx, result.duration || spec.seconds);
  // No request answered in the window: no per-request figure (not the whole window's CPU as one).
  if (spec.serverPid) figures.cpuUsPerRequest = figures.requests ? ((cpu1 - cpu0) * 1000) / figures.requests : NaN;
  return figures;
}
