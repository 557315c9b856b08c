// gRPC GetGroup load over HTTP/2 (h2c): a fixed number of unary calls in
// flight on one or a few sessions, hand-framed (5-byte prefix + protobuf).
// Runs as its own process (`runGrpcLoad` spawns this file) so that it does
// not share an event loop with the bench or autocannon.
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import { pathToFileURL } from "node:url";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { GetGroupRequestSchema, GroupSchema } from "../gen/platform/iam/v2beta1/groups_pb.js";
import { readCpuMs, startNode } from "./processes.js";
import { summarise, type Figures } from "./report.js";

export interface GrpcLoadConfig {
  /** http://host:port of an h2c listener. */
  origin: string;
  authorization?: string | undefined;
  /** A JSON array of group uids; each call picks one at random. */
  uidsFile: string;
  streams: number;
  sessions: number;
  warmupSeconds: number;
  seconds: number;
}

const PATH = "/platform.iam.v2beta1.GroupsService/GetGroup";

/** Spawns the load loop and resolves to its figures; `serverPid` adds the server's CPU per call. */
export async function runGrpcLoad(cfg: GrpcLoadConfig, serverPid?: number): Promise<Figures> {
  let cpu0 = NaN;
  let result: Figures | undefined;
  let failure: string | undefined;
  const started = await startNode({
    name: "grpc-load",
    args: ["--import", "tsx", new URL(import.meta.url).pathname, JSON.stringify(cfg)],
    ready: /"event":"started"/,
    onLine: (line) => {
      // Progress events: the measured window's CPU reading starts when the child says so.
      let msg: { event: string; figures?: Figures; error?: string };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        return void process.stderr.write(`  [grpc-load] ${line}\n`);
      }
      if (msg.event === "measure" && serverPid) cpu0 = readCpuMs(serverPid);
      else if (msg.event === "result") {
        result = msg.figures;
        if (result && serverPid) result.cpuUsPerRequest = ((readCpuMs(serverPid) - cpu0) * 1000) / Math.max(1, result.requests);
      } else if (msg.event === "error") failure = msg.error;
    },
  });
  // "close" follows the last stdout line (the result); "exit" may precede it.
  const code = await new Promise<number | null>((r) => started.child.once("close", (c) => r(c)));
  if (!result) throw new Error(`gRPC load failed (exit ${code}): ${failure ?? "no result"}`);
  return result;
}

function frame(uid: string): Buffer {
  const msg = toBinary(GetGroupRequestSchema, create(GetGroupRequestSchema, { uid }));
  const out = Buffer.allocUnsafe(5 + msg.length);
  out[0] = 0; // not compressed
  out.writeUInt32BE(msg.length, 1);
  out.set(msg, 5);
  return out;
}

const emit = (msg: object): void => void process.stdout.write(`${JSON.stringify(msg)}\n`);

async function main(cfg: GrpcLoadConfig): Promise<void> {
  const uids = JSON.parse(readFileSync(cfg.uidsFile, "utf8")) as string[];
  const sessions = await Promise.all(
    Array.from({ length: cfg.sessions }, async () => {
      const s = http2.connect(cfg.origin);
      s.on("error", (e) => {
        emit({ event: "error", error: `session: ${e.message}` });
        process.exit(1);
      });
      await new Promise<void>((r) => s.once("connect", () => r()));
      return s;
    }),
  );
  const headers: http2.OutgoingHttpHeaders = {
    ":method": "POST",
    ":path": PATH,
    "content-type": "application/grpc",
    te: "trailers",
    ...(cfg.authorization ? { authorization: cfg.authorization } : {}),
  };
  emit({ event: "started" });

  let recording = false;
  let stopping = false;
  let errors = 0;
  let firstError: string | undefined;
  let checked = false;
  const latencies: number[] = [];
  let inFlight = 0;
  let drained: (() => void) | undefined;

  const call = (session: http2.ClientHttp2Session): void => {
    const uid = uids[Math.floor(Math.random() * uids.length)]!;
    const t0 = performance.now();
    inFlight++;
    const stream = session.request(headers, { endStream: false });
    let status: string | undefined;
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      // Trailers-only responses (errors) carry grpc-status in the headers.
      if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]);
    });
    stream.on("trailers", (h) => {
      status = String(h["grpc-status"]);
    });
    // Only the very first response is decoded, to prove the answers are right.
    stream.on("data", (c: Buffer) => void (checked ? undefined : chunks.push(c)));
    stream.on("error", () => {});
    stream.on("close", () => {
      inFlight--;
      const ok = status === "0";
      if (!checked && ok) {
        checked = true;
        const body = Buffer.concat(chunks);
        const group = fromBinary(GroupSchema, body.subarray(5, 5 + body.readUInt32BE(1)));
        if (group.uid !== uid) {
          emit({ event: "error", error: `asked for ${uid}, got ${JSON.stringify(group.uid)}` });
          process.exit(1);
        }
      }
      if (recording) {
        if (ok) latencies.push(performance.now() - t0);
        else if (errors++ === 0) firstError = `grpc-status ${status ?? "none"} (rst ${stream.rstCode})`;
      }
      if (!stopping) call(session);
      else if (inFlight === 0) drained?.();
    });
    stream.end(frame(uid));
  };

  for (let i = 0; i < cfg.streams; i++) call(sessions[i % sessions.length]!);
  await new Promise((r) => setTimeout(r, cfg.warmupSeconds * 1000));
  recording = true;
  emit({ event: "measure" });
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, cfg.seconds * 1000));
  // Calls finishing after the window are neither counted nor waited on for the rate.
  recording = false;
  const seconds = (performance.now() - t0) / 1000;
  stopping = true;
  await Promise.race([new Promise<void>((r) => (drained = r)), new Promise((r) => setTimeout(r, 5_000).unref())]);
  for (const s of sessions) s.close();
  if (errors && firstError) process.stderr.write(`  [grpc-load] ${errors} failed calls, first: ${firstError}\n`);
  emit({ event: "result", figures: summarise(latencies, errors, seconds) });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(JSON.parse(process.argv[2] ?? "{}") as GrpcLoadConfig).catch((e: unknown) => {
    emit({ event: "error", error: String(e) });
    process.exit(1);
  });
}
