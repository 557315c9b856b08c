// Child processes of the bench (the service, the floor and bare servers, the
// gRPC load loop) and the /proc readings taken from them.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";

const running = new Set<ChildProcess>();

export interface Started {
  child: ChildProcess;
  /** The first stdout match of the `ready` pattern. */
  match: RegExpExecArray;
  readyMs: number;
}

export interface StartOptions {
  name: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  /** Matched against each stdout line; the child is "started" at the first line that matches. */
  ready: RegExp;
  timeoutMs?: number;
  /** Called with each stdout line after `ready` matched (the default echoes the first few to stderr). */
  onLine?: (line: string) => void;
}

/** Runs `node <args>` and resolves once its stdout matches `ready`. */
export function startNode(opts: StartOptions): Promise<Started> {
  const t0 = performance.now();
  const child = spawn(process.execPath, opts.args, {
    env: { ...process.env, ...opts.env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  return new Promise<Started>((resolve, reject) => {
    let seen = "";
    let pending = "";
    let started = false;
    let echoed = 0;
    const echo =
      opts.onLine ??
      ((line: string) => {
        // Warnings, errors and text that is not a log line are worth seeing (the first few);
        // the access log's line per request is not.
        const level = /^\{"level":(\d+)/.exec(line)?.[1];
        if (level !== undefined && Number(level) < 40) return;
        if (echoed++ < 10) process.stderr.write(`  [${opts.name}] ${line.slice(0, 300)}\n`);
      });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${opts.name} did not start within ${opts.timeoutMs ?? 60_000} ms`));
    }, opts.timeoutMs ?? 60_000);
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      pending += chunk;
      let nl: number;
      // Whole lines only: a ready line split across chunks must not leak its tail into `echo`.
      while ((nl = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (started) {
          if (line.trim()) echo(line);
          continue;
        }
        seen += `${line}\n`;
        const m = opts.ready.exec(line);
        if (!m) continue;
        started = true;
        clearTimeout(timer);
        resolve({ child, match: m, readyMs: performance.now() - t0 });
      }
    });
    // "close", not "exit": it comes after the last stdout chunk.
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      if (pending.trim()) {
        if (started) echo(pending);
        else seen += pending;
      }
      if (!started) reject(new Error(`${opts.name} exited (${signal ?? code}) before it was ready:\n${seen.slice(-2_000)}`));
    });
  });
}

/** SIGTERM, then SIGKILL if it is still there after `graceMs`. Resolves to whether it exited by itself. */
export async function stopProcess(child: ChildProcess, graceMs = 20_000): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return true;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  let clean = true;
  const timer = setTimeout(() => {
    clean = false;
    child.kill("SIGKILL");
  }, graceMs);
  await exited;
  clearTimeout(timer);
  return clean;
}

/** Kills whatever the bench still has running (error paths, Ctrl-C). */
export function killAll(): void {
  for (const child of running) child.kill("SIGKILL");
}

export interface Memory {
  rssMiB: number;
  hwmMiB: number;
}

/** VmRSS and VmHWM (peak RSS) of a live process; undefined where /proc is missing. */
export function readMemory(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN);
    return { rssMiB: kib("VmRSS") / 1024, hwmMiB: kib("VmHWM") / 1024 };
  } catch {
    return undefined;
  }
}

// USER_HZ: 100 on every mainstream Linux build; /proc/<pid>/stat counts in it.
const TICK_MS = 10;

/** User + system CPU time the process has used so far, in ms (NaN without /proc). */
export function readCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return NaN;
  }
}

/** Samples VmRSS every `everyMs` and keeps the largest value, for "RSS under load". */
export class RssSampler {
  maxMiB = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly pid: number) {}

  start(everyMs = 200): void {
    this.timer ??= setInterval(() => {
      const m = readMemory(this.pid);
      if (m && m.rssMiB > this.maxMiB) this.maxMiB = m.rssMiB;
    }, everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
