// PGlite in a worker thread (pglite-host.ts), behind the part of PGlite's interface the store uses:
// query, exec, transaction, listen, close. The database's work (WASM) then runs beside the event
// loop instead of on it, so requests are parsed and answered while a query runs
// (docs/design.md, "Storage").
import { Worker } from "node:worker_threads";
import type { Results } from "@electric-sql/pglite";
import { type ErrorFields, type HostReply, type HostRequest, type HostStart, toError } from "./pglite-protocol.js";

/** What a query may ask for across the thread: parsers must return their input (drizzle's do). */
export interface ThreadQueryOptions {
  rowMode?: "array" | "object";
  parsers?: Record<number | string, (value: string, typeId?: number) => unknown>;
}

/** A query/exec pair: the thread's own, and an open transaction's. */
export interface PgliteQueries {
  query<T>(text: string, params?: unknown[], options?: ThreadQueryOptions): Promise<Results<T>>;
  exec(text: string): Promise<Results[]>;
}

/** An open transaction: what PGlite's transaction callback receives, as drizzle uses it. */
export interface PgliteThreadTransaction extends PgliteQueries {
  rollback(): Promise<void>;
  readonly closed: boolean;
}

type Pending = { resolve: (value: unknown) => void; reject: (e: Error) => void };
type RequestBody = HostRequest extends infer R ? (R extends HostRequest ? Omit<R, "id"> : never) : never;

// A parser is sent as "leave this type as text"; anything else cannot cross the thread.
const PROBE = "\u0001pglite-thread probe";

/** Where the host is: beside this file, compiled (.js) or run from the sources under tsx (.ts). */
function startHost(start: HostStart): Worker {
  const fromSources = import.meta.url.endsWith(".ts");
  const host = new URL(fromSources ? "./pglite-host.ts" : "./pglite-host.js", import.meta.url);
  if (!fromSources) return new Worker(host, { workerData: start });
  // From the sources (tests, `npm run dev`) the thread loads TypeScript through tsx, as the main one does.
  const load = `import("tsx/esm/api").then((tsx) => tsx.tsImport(${JSON.stringify(host.href)}, ${JSON.stringify(import.meta.url)}))`;
  return new Worker(load, { eval: true, workerData: start });
}

/** The error a caller gets once the thread is gone: "shutting down", as a database server would say. */
function threadEnded(why: string): Error {
  return Object.assign(new Error(`the embedded database's thread has ended: ${why}`), { code: "57P01" });
}

export class PgliteThread implements PgliteQueries {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #listeners = new Map<string, Set<(payload: string) => void>>();
  #nextId = 1;
  #ended: Error | undefined;
  readonly #exited: Promise<void>;
  // Transactions hold the store (PGlite is one connection): while one is open, other work waits
  // here, in order, as it waits on PGlite's own lock in-process.
  #exclusive = false;
  readonly #waiting: { exclusive: boolean; go: () => void }[] = [];

  private constructor(worker: Worker) {
    this.#worker = worker;
    worker.unref();
    worker.on("message", (message: HostReply) => this.#receive(message));
    worker.on("error", (e) => this.#end(threadEnded(e.message)));
    this.#exited = new Promise((resolve) =>
      worker.once("exit", (code) => {
        this.#end(threadEnded(`exit code ${code}`));
        resolve();
      }),
    );
  }

  /**
   * Starts a thread on `dataDir` (a directory, or `memory://`); resolves once PGlite is open. A new
   * directory is first filled from `template` when one is given (pglite-template.ts).
   */
  static async open(dataDir: string, template?: string): Promise<PgliteThread> {
    const worker = startHost({ dataDir, template });
    const ready = new Promise<void>((resolve, reject) => {
      const onMessage = (message: HostReply) => {
        if (message.op !== "ready" && message.op !== "failed") return;
        worker.off("message", onMessage);
        if (message.op === "ready") resolve();
        else reject(toError(message.error));
      };
      worker.on("message", onMessage);
      worker.once("error", reject);
      worker.once("exit", (code) => reject(threadEnded(`exit code ${code} before PGlite opened`)));
    });
    const thread = new PgliteThread(worker);
    worker.ref();
    try {
      await ready;
    } catch (e) {
      await worker.terminate();
      throw e;
    } finally {
      worker.unref();
    }
    return thread;
  }

  query<T>(text: string, params?: unknown[], options?: ThreadQueryOptions): Promise<Results<T>> {
    return this.#whenFree(false, () => this.#query<T>(text, params, options));
  }

  exec(text: string): Promise<Results[]> {
    return this.#whenFree(false, () => this.#send({ op: "exec", text }) as Promise<Results[]>);
  }

  /**
   * Runs `fn` in a transaction, as PGlite's own `transaction` does: BEGIN, then COMMIT when `fn`
   * resolves (unless it rolled back), ROLLBACK when it throws; nothing else runs meanwhile.
   */
  transaction<T>(fn: (tx: PgliteThreadTransaction) => Promise<T>): Promise<T> {
    return this.#whenFree(true, async () => {
      let closed = false;
      const open = (): void => {
        if (closed) throw new Error("the transaction is closed");
      };
      const tx: PgliteThreadTransaction = {
        query: async <R>(text: string, params?: unknown[], options?: ThreadQueryOptions) => {
          open();
          return this.#query<R>(text, params, options);
        },
        exec: async (text: string) => {
          open();
          return (await this.#send({ op: "exec", text })) as Results[];
        },
        rollback: async () => {
          open();
          await this.#send({ op: "exec", text: "rollback" });
          closed = true;
        },
        get closed() {
          return closed;
        },
      };
      await this.#send({ op: "exec", text: "begin" });
      try {
        const result = await fn(tx);
        if (!closed) {
          closed = true;
          await this.#send({ op: "exec", text: "commit" });
        }
        return result;
      } catch (e) {
        if (!closed) {
          closed = true;
          await this.#send({ op: "exec", text: "rollback" }).catch(() => {});
        }
        throw e;
      }
    });
  }

  /** Calls `onNotify` with each NOTIFY on `channel`; resolves to the unsubscribe function. */
  async listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>> {
    let callbacks = this.#listeners.get(channel);
    if (!callbacks) {
      callbacks = new Set();
      this.#listeners.set(channel, callbacks);
      await this.#whenFree(false, () => this.#send({ op: "listen", channel }));
    }
    callbacks.add(onNotify);
    return async () => {
      const set = this.#listeners.get(channel);
      if (!set?.delete(onNotify) || set.size > 0) return;
      this.#listeners.delete(channel);
      if (!this.#ended) await this.#whenFree(false, () => this.#send({ op: "unlisten", channel }));
    };
  }

  /** Closes PGlite (its files are then whole) and waits for the thread to end. */
  async close(): Promise<void> {
    if (!this.#ended) {
      await this.#whenFree(true, () => this.#send({ op: "close" }));
      this.#end(threadEnded("closed"));
    }
    // Until the thread has ended, the close is an answer due (the last reply unref'd the thread): a
    // process with nothing else to do (a test runner's global setup) would otherwise exit in the
    // middle of close(), silently, with code 0.
    this.#worker.ref();
    await this.#exited;
  }

  get closed(): boolean {
    return this.#ended !== undefined;
  }

  #query<T>(text: string, params: unknown[] | undefined, options: ThreadQueryOptions | undefined): Promise<Results<T>> {
    let rawTypes: number[] | undefined;
    if (options?.parsers) {
      rawTypes = [];
      for (const [oid, parser] of Object.entries(options.parsers)) {
        if (parser(PROBE, Number(oid)) !== PROBE)
          throw new Error(`a parser for type ${oid} that changes its text cannot run in PGlite's thread`);
        rawTypes.push(Number(oid));
      }
    }
    return this.#send({ op: "query", text, params, rowMode: options?.rowMode, rawTypes }) as Promise<Results<T>>;
  }

  /** Runs `work` once nothing holds the store; `exclusive` work holds it until it settles. */
  async #whenFree<T>(exclusive: boolean, work: () => Promise<T>): Promise<T> {
    if (this.#exclusive || this.#waiting.length > 0) {
      await new Promise<void>((go) => this.#waiting.push({ exclusive, go }));
    } else if (exclusive) {
      this.#exclusive = true;
    }
    if (!exclusive) return work();
    try {
      return await work();
    } finally {
      this.#exclusive = false;
      this.#admit();
    }
  }

  // Lets waiting work go in order: plain queries until the next exclusive one, which goes alone.
  #admit(): void {
    while (!this.#exclusive && this.#waiting.length > 0) {
      const next = this.#waiting.shift()!;
      if (next.exclusive) this.#exclusive = true;
      next.go();
    }
  }

  #send(body: RequestBody): Promise<unknown> {
    if (this.#ended) return Promise.reject(this.#ended);
    const id = this.#nextId++;
    // The thread keeps the process alive only while an answer is due, as a socket with a query
    // in flight does; an idle store does not hold a process that is otherwise done.
    if (this.#pending.size === 0) this.#worker.ref();
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ ...body, id } as HostRequest);
    });
  }

  #receive(message: HostReply): void {
    if (message.op === "notify") {
      for (const callback of this.#listeners.get(message.channel) ?? []) callback(message.payload);
      return;
    }
    if (message.op !== "reply") return;
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#pending.delete(message.id);
    if (this.#pending.size === 0) this.#worker.unref();
    if (message.ok) pending.resolve(message.value);
    else pending.reject(toError(message.error as ErrorFields));
  }

  #end(reason: Error): void {
    if (this.#ended) return;
    this.#ended = reason;
    for (const pending of this.#pending.values()) pending.reject(reason);
    this.#pending.clear();
    this.#worker.unref();
  }
}
