// The worker thread that runs PGlite for pglite-thread.ts: it opens the data directory, cuts the
// result parsers down (pglite-parsers.ts), then runs what the main thread sends, one message at a
// time and in the order sent (docs/design.md, "Storage"). Transactions are the main thread's
// business: it sends nothing else while one is open.
import { parentPort, workerData } from "node:worker_threads";
import { PGlite, type QueryOptions } from "@electric-sql/pglite";
import { keepBuiltInTypeParsers } from "./pglite-parsers.js";
import { PgliteStatements } from "./pglite-statements.js";
import { seedFromTemplate } from "./pglite-template.js";
import { compilePglite } from "./pglite-wasm.js";
import { errorFields, type HostReply, type HostRequest, type HostStart } from "./pglite-protocol.js";

const port = parentPort;
if (!port) throw new Error("pglite-host.ts runs as a worker thread (pglite-thread.ts starts it)");
const { dataDir, template } = workerData as HostStart;

// Query options by the set of types read as text, made once per set: drizzle passes the same one.
const rawOptions = new Map<string, QueryOptions>();
function optionsFor(rowMode: "array" | "object" | undefined, rawTypes: number[] | undefined): QueryOptions | undefined {
  if (!rowMode && !rawTypes) return undefined;
  const key = `${rowMode ?? ""}:${rawTypes?.join(",") ?? ""}`;
  let options = rawOptions.get(key);
  if (!options) {
    const parsers: NonNullable<QueryOptions["parsers"]> = {};
    for (const oid of rawTypes ?? []) parsers[oid] = (value: string) => value;
    options = { ...(rowMode ? { rowMode } : {}), ...(rawTypes ? { parsers } : {}) };
    rawOptions.set(key, options);
  }
  return options;
}

const post = (reply: HostReply): void => port.postMessage(reply);

/**
 * Each listened channel's way out: PGlite's `unlisten(channel)` without the callback sends UNLISTEN
 * but keeps the callback, which the next `listen` of the channel then adds to, so every NOTIFY
 * came once more per earlier listen (a store lent to one server after another heard each grants
 * change seven times). The function `listen` returns removes its own callback.
 */
const listening = new Map<string, () => Promise<void>>();
/** How queries run (pglite-statements.ts), once PGlite is open. */
let statements: PgliteStatements | undefined;

async function run(pg: PGlite, request: HostRequest): Promise<unknown> {
  switch (request.op) {
    case "query":
      return statements!.query(request.text, request.params, optionsFor(request.rowMode, request.rawTypes));
    case "exec":
      return pg.exec(request.text);
    case "listen":
      // PGlite calls back while the query that notified runs: the notification goes out before
      // that query's answer, as in-process (the authorizer relies on it).
      if (!listening.has(request.channel)) {
        const channel = request.channel;
        listening.set(channel, await pg.listen(channel, (payload) => post({ op: "notify", channel, payload })));
      }
      return undefined;
    case "unlisten": {
      const unlisten = listening.get(request.channel);
      listening.delete(request.channel);
      await unlisten?.();
      return undefined;
    }
    case "close":
      await pg.close();
      return undefined;
  }
}

async function main(): Promise<void> {
  let pg: PGlite;
  try {
    // Here, off the main thread: the copy overlaps the server's own start.
    if (template !== undefined && !dataDir.startsWith("memory://")) seedFromTemplate(dataDir, template);
    // With the store's shared_buffers (pglite-wasm.ts).
    pg = new PGlite(dataDir, { wasmModule: await compilePglite() });
    await keepBuiltInTypeParsers(pg);
    statements = new PgliteStatements(pg);
  } catch (e) {
    post({ op: "failed", error: errorFields(e) });
    return;
  }
  post({ op: "ready" });
  let tail = Promise.resolve();
  port!.on("message", (request: HostRequest) => {
    tail = tail.then(async () => {
      try {
        post({ op: "reply", id: request.id, ok: true, value: await run(pg, request) });
      } catch (e) {
        post({ op: "reply", id: request.id, ok: false, error: errorFields(e) });
      }
      // Closed: nothing more comes, and the thread ends once the port does.
      if (request.op === "close") port!.close();
    });
  });
}

void main();
