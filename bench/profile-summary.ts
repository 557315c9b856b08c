// Top self-time functions of a V8 .cpuprofile (what `node --cpu-prof` writes),
// aggregated by `functionName url:line`, so two profiles (before/after a
// change) can be compared as text.
//
// Usage: node --import tsx bench/profile-summary.ts <file.cpuprofile | dir> [top=15]
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  /** µs between consecutive samples; timeDeltas[i] precedes samples[i]. */
  timeDeltas?: number[];
}

export interface HotFunction {
  key: string;
  selfMs: number;
  share: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Sampled time not spent idle: the denominator of `share`. */
  busyMs: number;
  top: HotFunction[];
}

const repoRoot = `${pathToFileURL(process.cwd()).href}/`;

function label(frame: ProfileNode["callFrame"]): string {
  const name = frame.functionName || "(anonymous)";
  if (!frame.url) return name; // (program), (garbage collector), (idle), natives
  const where = frame.url.startsWith(repoRoot) ? frame.url.slice(repoRoot.length) : frame.url.replace(/^file:\/\//, "");
  // V8 lines are 0-based.
  return `${name} ${where}:${frame.lineNumber + 1}`;
}

export function summariseProfile(profile: CpuProfile, file: string, top = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMs = new Map<string, number>();
  const add = (node: ProfileNode | undefined, ms: number) => {
    if (!node) return;
    const key = label(node.callFrame);
    selfMs.set(key, (selfMs.get(key) ?? 0) + ms);
  };
  if (profile.samples && profile.timeDeltas && profile.samples.length === profile.timeDeltas.length) {
    // Each sample's weight is the time until the next one (the last gets the mean).
    const n = profile.samples.length;
    const mean = (profile.endTime - profile.startTime) / Math.max(1, n) / 1000;
    for (let i = 0; i < n; i++) add(byId.get(profile.samples[i]!), i + 1 < n ? profile.timeDeltas[i + 1]! / 1000 : mean);
  } else {
    // Older profiles: hit counts at the nominal interval.
    const hits = profile.nodes.reduce((s, nd) => s + (nd.hitCount ?? 0), 0);
    const perHit = (profile.endTime - profile.startTime) / Math.max(1, hits) / 1000;
    for (const nd of profile.nodes) add(nd, (nd.hitCount ?? 0) * perHit);
  }
  const totalMs = [...selfMs.values()].reduce((a, b) => a + b, 0);
  const busyMs = totalMs - (selfMs.get("(idle)") ?? 0);
  const ranked = [...selfMs.entries()]
    .filter(([key]) => key !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => ({ key, selfMs: ms, share: busyMs > 0 ? ms / busyMs : 0 }));
  return { file, totalMs, busyMs, top: ranked };
}

/** The profiles in `path` (a .cpuprofile file or a directory of them), newest last. */
export async function summariseProfiles(path: string, top = 15): Promise<ProfileSummary[]> {
  const files = (await stat(path)).isDirectory()
    ? (await readdir(path))
        .filter((f) => f.endsWith(".cpuprofile"))
        .sort()
        .map((f) => join(path, f))
    : [path];
  const out: ProfileSummary[] = [];
  for (const file of files) out.push(summariseProfile(JSON.parse(await readFile(file, "utf8")) as CpuProfile, file, top));
  return out;
}

/** `node --cpu-prof` names files CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main one. */
export function threadOf(file: string): string {
  const thread = /\.(\d+)\.\d+\.cpuprofile$/.exec(file)?.[1];
  return thread === undefined ? "" : thread === "0" ? "main thread" : `worker thread ${thread}`;
}

export function formatProfile(s: ProfileSummary): string {
  const thread = threadOf(s.file);
  const lines = [
    `  ${s.file}${thread ? ` (${thread})` : ""}: ${(s.busyMs / 1000).toFixed(1)} s busy of ${(s.totalMs / 1000).toFixed(1)} s sampled; top self time (share of busy):`,
  ];
  for (const [i, f] of s.top.entries()) {
    lines.push(
      `  ${String(i + 1).padStart(3)}. ${f.selfMs.toFixed(0).padStart(7)} ms ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.key}`,
    );
  }
  return lines.join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [path, top] = process.argv.slice(2);
  if (!path) {
    process.stderr.write("usage: node --import tsx bench/profile-summary.ts <file.cpuprofile | dir> [top]\n");
    process.exit(2);
  }
  for (const s of await summariseProfiles(path, Number(top ?? 15))) console.log(formatProfile(s));
}
