// npm run bench: time from `npm start` to ready, and GetGroup throughput
// over REST and Connect against a real server process on loopback.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";

const DURATION_S = Number(process.env["BENCH_SECONDS"] ?? 10);
const CONNECTIONS = Number(process.env["BENCH_CONNECTIONS"] ?? 32);

interface Started {
  child: ChildProcess;
  port: number;
  readyMs: number;
}

async function startServer(dataDir: string): Promise<Started> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", "src/server/main.ts"], {
    env: { ...process.env, PORT: "0", PLATFORM_DATA_DIR: dataDir, LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("server did not start within 60 s")), 60_000);
    child.stdout!.on("data", (c: Buffer) => {
      out += c.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (code) => reject(new Error(`server exited ${code}`)));
  });
  for (let i = 0; i < 600; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
    if (ok) return { child, port, readyMs: performance.now() - t0 };
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("server never became ready");
}

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await exited;
}

async function load(title: string, opts: autocannon.Options): Promise<autocannon.Result> {
  const result = await autocannon({ duration: DURATION_S, connections: CONNECTIONS, ...opts });
  const errors = result.errors + result.non2xx;
  console.log(
    `${title}: ${Math.round(result.requests.average)} req/s, latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${errors} errors (${CONNECTIONS} connections, ${DURATION_S} s)`,
  );
  return result;
}

async function main(): Promise<void> {
  const dataDir = await mkdtemp(join(tmpdir(), "platform-bench-"));
  try {
    const first = await startServer(dataDir);
    console.log(`npm start → ready, empty data dir (migrations + bootstrap): ${first.readyMs.toFixed(0)} ms`);
    await stop(first.child);
    const server = await startServer(dataDir);
    console.log(`npm start → ready, existing data dir: ${server.readyMs.toFixed(0)} ms`);
    const base = `http://127.0.0.1:${server.port}`;
    const token = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

    const created = await fetch(`${base}/iam/v2beta1/groups`, { method: "POST", headers, body: JSON.stringify({ name: "bench" }) });
    const group = (await created.json()) as { uid: string };
    const child = await fetch(`${base}/iam/v2beta1/groups/${group.uid}`, { method: "POST", headers, body: JSON.stringify({ name: "child" }) });
    const childUid = ((await child.json()) as { uid: string }).uid;

    await load("warm-up", { url: `${base}/iam/v2beta1/groups/${childUid}`, headers, duration: 2 });
    await load("GetGroup over REST", { url: `${base}/iam/v2beta1/groups/${childUid}`, headers });
    await load("GetGroup over Connect (JSON)", {
      url: `${base}/platform.iam.v2beta1.GroupsService/GetGroup`,
      method: "POST",
      headers,
      body: JSON.stringify({ uid: childUid }),
    });
    await load("ListGroups (children, page 50) over REST", { url: `${base}/iam/v2beta1/groups?uidp.children_of=${group.uid}`, headers });
    const status = await readFile(`/proc/${server.child.pid}/status`, "utf8").catch(() => "");
    const peak = /VmHWM:\s+(\d+) kB/.exec(status)?.[1];
    if (peak) console.log(`server peak RSS after load: ${Math.round(Number(peak) / 1024)} MiB`);
    await stop(server.child);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
