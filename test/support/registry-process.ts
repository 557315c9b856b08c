// A running docker-registry (CNCF distribution) for a test, and skopeo runs against it, with
// the programs and environment of test/support/registry-tools.ts. The registry's log (its
// stdout and stderr) is kept for the tests to assert on.
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { createServer } from "node:net";
import type { RegistryTools } from "./registry-tools.js";

/** How long the registry may take to answer /v2/ once started (it starts in well under a second). */
const START_TIMEOUT_MS = 10_000;
const START_POLL_MS = 50;
/** How long stop() waits for SIGTERM before SIGKILL (distribution drains its connections first). */
const STOP_GRACE_MS = 5_000;
/** Log kept per registry: the oldest output goes first past this. */
const MAX_LOG_CHARS = 8 * 1024 * 1024;
/** skopeo output kept per run. */
const MAX_OUTPUT_CHARS = 4 * 1024 * 1024;
const SKOPEO_TIMEOUT_MS = 60_000;

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== "object" || address === null) throw new Error("no port from the kernel");
  return address.port;
}

/**
 * `http.addr` of a distribution configuration: YAML as distribution reads it (block style, the
 * `addr` key directly under the top-level `http` key) or JSON, which is YAML too.
 */
export function httpAddrOf(config: string): string | undefined {
  const text = config.trimStart();
  if (text.startsWith("{")) {
    const http = (JSON.parse(text) as { http?: { addr?: unknown } }).http;
    return typeof http?.addr === "string" ? http.addr : undefined;
  }
  const lines = config.split(/\r?\n/);
  const start = lines.findIndex((l) => /^http:\s*(#.*)?$/.test(l));
  if (start < 0) return undefined;
  let indent: number | undefined;
  for (const line of lines.slice(start + 1)) {
    if (/^\s*(#.*)?$/.test(line)) continue;
    const own = /^( *)/.exec(line)?.[1]?.length ?? 0;
    if (own === 0) break; // the next top-level key
    indent ??= own;
    if (own !== indent) continue; // deeper: another key's value
    const m = /^ *addr: *(?:"([^"]*)"|'([^']*)'|([^\s#]+))\s*(#.*)?$/.exec(line);
    if (m) return m[1] ?? m[2] ?? m[3];
  }
  return undefined;
}

/** The port of a loopback `addr` (127.0.0.1:<port>); anything else is refused: a test registry listens on loopback only. */
export function loopbackPortOf(addr: string): number {
  const m = /^127\.0\.0\.1:(\d{1,5})$/.exec(addr);
  const port = Number(m?.[1]);
  if (!m || port < 1 || port > 65_535)
    throw new Error(`the registry's http.addr ${JSON.stringify(addr.slice(0, 200))} is not 127.0.0.1:<port>`);
  return port;
}

export interface RunningRegistry {
  /** http://127.0.0.1:<port> */
  url: string;
  /** Everything the registry wrote to stdout and stderr so far (its log lines). */
  logs(): string;
  /** SIGTERM, then SIGKILL after a bound; resolves once the process is gone. Safe to call twice. */
  stop(): Promise<void>;
}

/**
 * Starts `docker-registry serve <configFile>` and resolves once `GET /v2/` answers (200 without
 * authentication, 401 with it). The address is the configuration's `http.addr`, or
 * REGISTRY_HTTP_ADDR in `env` (distribution lets such variables override the file).
 */
export async function startRegistry(options: {
  configFile: string;
  tools: RegistryTools;
  env?: NodeJS.ProcessEnv;
}): Promise<RunningRegistry> {
  const { configFile, tools } = options;
  const env = { ...tools.env, ...options.env };
  const config = await readFile(configFile, "utf8");
  const addr = options.env?.["REGISTRY_HTTP_ADDR"] ?? httpAddrOf(config);
  if (addr === undefined) throw new Error(`${configFile} has no http.addr (and REGISTRY_HTTP_ADDR is not given)`);
  const url = `http://127.0.0.1:${loopbackPortOf(addr)}`;

  const child = spawn(tools.registry, ["serve", configFile], { env, stdio: ["ignore", "pipe", "pipe"] });
  let log = "";
  const append = (chunk: Buffer) => {
    log += chunk.toString("utf8");
    if (log.length > MAX_LOG_CHARS) log = log.slice(log.length - MAX_LOG_CHARS);
  };
  child.stdout.on("data", append);
  child.stderr.on("data", append);
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once("close", () => {
      exited = true;
      resolve();
    });
    child.once("error", (error) => {
      append(Buffer.from(`could not start ${tools.registry}: ${error.message}\n`));
      exited = true;
      resolve();
    });
  });

  const stop = async (): Promise<void> => {
    if (exited) return;
    child.kill("SIGTERM");
    const killed = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    await exit;
    clearTimeout(killed);
  };

  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (exited) throw new Error(`docker-registry serve ${configFile} ended before answering at ${url}:\n${log}`);
    const status = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(1_000) }).then(
      async (r) => {
        await r.arrayBuffer();
        return r.status;
      },
      () => undefined,
    );
    // Another process on the port would answer too: ours must still be running.
    if ((status === 200 || status === 401) && !exited) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(
        `docker-registry at ${url} did not answer /v2/ with 200 or 401 in ${START_TIMEOUT_MS} ms (last: ${status ?? "no answer"}):\n${log}`,
      );
    }
    await new Promise((r) => setTimeout(r, START_POLL_MS));
  }
  return { url, logs: () => log, stop };
}

export interface SkopeoResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `skopeo --policy <the tests' policy> …args` to its end (at most `timeoutMs`, then
 * SIGKILL and a rejection), with the tools' environment plus `env`.
 */
export function skopeo(
  tools: RegistryTools,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<SkopeoResult> {
  const timeoutMs = options.timeoutMs ?? SKOPEO_TIMEOUT_MS;
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string" && !a.includes("\0"))) {
    return Promise.reject(new Error("skopeo: arguments must be strings without NUL"));
  }
  return new Promise((resolve, reject) => {
    // Its own process group, so that a timeout ends whatever it started too.
    const child = spawn(tools.skopeo, ["--policy", tools.policy, ...args], {
      env: { ...tools.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout = (stdout + d.toString("utf8")).slice(-MAX_OUTPUT_CHARS)));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString("utf8")).slice(-MAX_OUTPUT_CHARS)));
    const timer = setTimeout(() => {
      try {
        if (child.pid) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      reject(new Error(`skopeo ${args.join(" ")} ran past ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(new Error(`could not start ${tools.skopeo}: ${error.message}`));
    });
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
