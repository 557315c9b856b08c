import type { LookupAddress } from "node:dns";
import { isIP } from "node:net";
import { Agent, fetch as undiciFetch } from "undici";
import { addressAllowed, addressRange } from "./address-policy.js";
import { readBodyLimited } from "./body-limit.js";
import { EgressError } from "./egress-error.js";
import { dnsResolver } from "./dns-resolve.js";
import { pinnedConnector, type PinnedConnect, type Resolve } from "./pinned-connect.js";
import { checkUrl, type CheckedUrl } from "./url-policy.js";

export const DEFAULT_TIMEOUT_MS = 5_000;
export const DEFAULT_MAX_BYTES = 256 * 1024;
export const DEFAULT_MAX_IN_FLIGHT = 16;
/** Connection pools kept for reuse, one per origin and set of checked addresses; the least recently used goes first. */
export const DEFAULT_MAX_POOLS = 64;
/** How long an idle connection is kept for the next request (less if the server says so). */
const KEEP_ALIVE_MS = 4_000;
/** One for the process, so that every guard shares the answers being waited for. */
const systemResolve = dnsResolver();

/** A kept connection pool and how many requests are using it. */
interface Pool {
  agent: Agent;
  active: number;
}

/** Statuses whose Response may not carry a body. */
const NULL_BODY_STATUSES = new Set([204, 205]);
/** The answer is handed on decoded and whole, so these no longer describe it. */
const DROPPED_HEADERS = new Set(["content-encoding", "content-length", "transfer-encoding"]);

export interface EgressOptions {
  /** PLATFORM_ALLOW_INSECURE_ISSUERS: http, and loopback addresses, for development. Nothing else. */
  allowInsecure: boolean;
  /** The whole request: resolution, connection and body. */
  timeoutMs?: number;
  maxBytes?: number;
  /** Outbound requests in flight at once; more fail fast. */
  maxInFlight?: number;
  /** Connection pools kept (one per origin and set of checked addresses). */
  maxPools?: number;
  resolve?: Resolve;
  connect?: PinnedConnect;
}

/** The parts of a fetch `RequestInit` the server's clients send (openid-client's among them). */
export interface EgressRequestInit {
  method?: string;
  headers?: Record<string, string> | [string, string][];
  body?: string | Uint8Array | ArrayBuffer | URLSearchParams | ReadableStream<Uint8Array> | null;
  /** Set to `half` with a stream body. */
  duplex?: "half";
  signal?: AbortSignal | null;
}

/**
 * fetch, guarded: a fetch-compatible function (redirects are never
 * followed; the answer comes back whole, its body already read within the
 * size cap).
 */
export type EgressFetch = (url: string | URL, init?: EgressRequestInit) => Promise<Response>;

/**
 * A share of the guard's outbound requests (docs/security.md, "Outbound
 * budgets"): its requests fail fast as "busy" once `maxInFlight` of them are
 * in flight, whatever other budgets do. A budget made `within` another counts
 * against both, so one tenant's share is bounded and so is all tenants'.
 */
export interface EgressBudget {
  /** Names the budget in the log ("idp/<org>"); budgets with one key share one count. */
  readonly key: string;
  readonly maxInFlight: number;
  readonly fetch: EgressFetch;
  /** GETs `url` and parses its 200 answer as JSON. */
  fetchJson(url: string | URL): Promise<unknown>;
  /** A budget inside this one, keyed `<this key>/<key>`. */
  within(key: string, maxInFlight: number): EgressBudget;
}

/** Resolves when `work` does, or rejects with the abort reason as soon as `signal` aborts. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    // Nobody waits for `work` any more: its failure must not become an unhandled rejection.
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** "fetch failed: connect ECONNREFUSED …": the messages along the cause chain, for the log. */
function describe(e: unknown): string {
  const parts: string[] = [];
  for (let cur = e; cur instanceof Error && parts.length < 4; cur = cur.cause) parts.push(cur.message);
  return parts.length ? parts.join(": ") : String(e);
}

/**
 * The egress guard: every outbound request of the server goes through it
 * (docs/design.md, "Egress"). It allows https only (http with the development
 * flag), resolves the host once and refuses unless every address is public
 * unicast (loopback too with the development flag), then connects to
 * exactly the addresses it checked. Each request has a deadline and a
 * response size cap, redirects are refused, and only so many requests may
 * be in flight, in all and per budget (docs/security.md, "Outbound
 * budgets"). Failures are EgressErrors whose text is for the log only.
 */
export class Egress {
  private readonly timeoutMs: number;
  private readonly maxBytes: number;
  private readonly maxInFlight: number;
  private readonly maxPools: number;
  private readonly resolve: Resolve;
  private readonly connect: PinnedConnect;
  private inFlight = 0;
  /** Requests in flight per budget key; a key leaves once none of its requests is in flight. */
  private readonly inFlightByKey = new Map<string, number>();
  /** Keyed by origin and checked addresses; a Map keeps insertion order, which serves as recency. */
  private readonly pools = new Map<string, Pool>();
  /** Pools pushed out of `pools`, still carrying requests. */
  private readonly retired = new Set<Pool>();
  private closed = false;

  constructor(private readonly opts: EgressOptions) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.maxBytes = opts.maxBytes ?? DEFAULT_MAX_BYTES;
    this.maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.maxPools = opts.maxPools ?? DEFAULT_MAX_POOLS;
    this.resolve = opts.resolve ?? systemResolve;
    this.connect = opts.connect ?? pinnedConnector(this.timeoutMs);
  }

  /** The URL rule alone (scheme, credentials, IP literal); throws an EgressError saying why not. */
  checkUrl(url: string | URL): URL {
    return checkUrl(url, { allowInsecure: this.opts.allowInsecure }).url;
  }

  /** True when the URL rule allows `url` (its host name is only resolved when it is fetched). */
  permits(url: string | URL): boolean {
    try {
      this.checkUrl(url);
      return true;
    } catch (e) {
      if (e instanceof EgressError) return false;
      throw e;
    }
  }

  /** fetch on no budget but the guard's own cap. */
  readonly fetch: EgressFetch = (url, init) => this.request(url, init ?? {}, []);

  /** GETs `url` and parses its 200 answer as JSON (no budget but the guard's own cap). */
  fetchJson(url: string | URL): Promise<unknown> {
    return getJson(this.fetch, url);
  }

  /**
   * A budget of its own, counted with the guard's cap (which bounds every
   * request): see EgressBudget. Budgets are made per request and cost
   * nothing while none of their requests is in flight.
   */
  budget(key: string, maxInFlight: number): EgressBudget {
    return this.budgetChain([{ key, maxInFlight }]);
  }

  private budgetChain(chain: readonly BudgetLimit[]): EgressBudget {
    const own = chain[chain.length - 1]!;
    const fetch: EgressFetch = (url, init) => this.request(url, init ?? {}, chain);
    return {
      key: own.key,
      maxInFlight: own.maxInFlight,
      fetch,
      fetchJson: (url) => getJson(fetch, url),
      within: (key, maxInFlight) => this.budgetChain([...chain, { key: `${own.key}/${key}`, maxInFlight }]),
    };
  }

  private async request(url: string | URL, init: EgressRequestInit, budgets: readonly BudgetLimit[]): Promise<Response> {
    const target = checkUrl(url, { allowInsecure: this.opts.allowInsecure });
    const what = `${init.method ?? "GET"} ${target.url.origin}${target.url.pathname}`;
    if (this.closed) throw shuttingDown(what);
    // The innermost budget first: the log says whose share ran out.
    for (const b of [...budgets].reverse()) {
      if ((this.inFlightByKey.get(b.key) ?? 0) >= b.maxInFlight) {
        throw new EgressError("busy", `${what}: ${b.maxInFlight} outbound requests of budget ${b.key} already in flight`);
      }
    }
    if (this.inFlight >= this.maxInFlight)
      throw new EgressError("busy", `${what}: ${this.maxInFlight} outbound requests already in flight`);
    this.inFlight++;
    for (const b of budgets) this.inFlightByKey.set(b.key, (this.inFlightByKey.get(b.key) ?? 0) + 1);
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const signal = init.signal ? AbortSignal.any([init.signal, deadline]) : deadline;
    try {
      const addresses = await this.addressesOf(target, signal, what);
      return await this.exchange(target.url, addresses, init, signal, what);
    } catch (e) {
      if (e instanceof EgressError) throw e;
      if (deadline.aborted) throw new EgressError("timeout", `${what}: no answer within ${this.timeoutMs} ms`, { cause: e });
      throw new EgressError("network", `${what}: ${describe(e)}`, { cause: e });
    } finally {
      this.inFlight--;
      for (const b of budgets) {
        const left = (this.inFlightByKey.get(b.key) ?? 1) - 1;
        if (left > 0) this.inFlightByKey.set(b.key, left);
        else this.inFlightByKey.delete(b.key);
      }
    }
  }

  /** The addresses to connect to: the literal, or every address the host resolves to, all of them allowed. */
  private async addressesOf(target: CheckedUrl, signal: AbortSignal, what: string): Promise<readonly LookupAddress[]> {
    if (target.literal) return [{ address: target.host, family: isIP(target.host) }];
    let found: readonly LookupAddress[];
    try {
      found = await untilAborted(this.resolve(target.host), signal);
    } catch (e) {
      if (signal.aborted) throw e;
      throw new EgressError("address", `${what}: ${target.host} did not resolve (${describe(e)})`, { cause: e });
    }
    if (found.length === 0) throw new EgressError("address", `${what}: ${target.host} has no address`);
    // One non-public answer is enough to refuse: which one a connection would take is not ours to choose.
    const refused = found.filter((a) => !addressAllowed(a.address, { allowLoopback: this.opts.allowInsecure }));
    if (refused.length) {
      const list = refused.map((a) => `${a.address} (${addressRange(a.address)})`).join(", ");
      throw new EgressError("address", `${what}: ${target.host} resolves to ${list}, not a public address`);
    }
    return found;
  }

  /**
   * The connection pool for `url`'s origin at exactly `addresses`: its connections can only reach
   * those addresses, and a request whose name now resolves otherwise gets another pool. Reusing
   * connections spares a TCP (and TLS) handshake per request, every webhook delivery to a receiver
   * among them. The caller counts itself in `active` while it uses the pool.
   */
  private poolFor(url: URL, addresses: readonly LookupAddress[], what: string): Pool {
    // A request that was resolving its name when close() ran: no new pool after the last was closed.
    if (this.closed) throw shuttingDown(what);
    const key = `${url.origin} ${addresses
      .map((a) => `${a.family}/${a.address}`)
      .sort()
      .join(",")}`;
    let pool = this.pools.get(key);
    if (pool) this.pools.delete(key);
    else {
      pool = { agent: this.pinnedAgent(addresses, { keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS }), active: 0 };
      const oldest = this.pools.size >= this.maxPools ? this.pools.entries().next().value : undefined;
      if (oldest) {
        // Pushed out: closed at once, or once the requests it carries are done (leave()).
        this.pools.delete(oldest[0]);
        if (oldest[1].active === 0) void oldest[1].agent.destroy().catch(() => {});
        else this.retired.add(oldest[1]);
      }
    }
    this.pools.set(key, pool);
    return pool;
  }

  /** An undici Agent whose connections can only reach `addresses`. */
  private pinnedAgent(addresses: readonly LookupAddress[], options: Omit<Agent.Options, "connect"> = {}): Agent {
    return new Agent({ ...options, connect: (target, callback) => this.connect({ ...target, addresses }, callback) });
  }

  /** A request is done with `pool`: a pool pushed out meanwhile is closed once nobody uses it. */
  private leave(pool: Pool): void {
    pool.active--;
    if (pool.active === 0 && this.retired.delete(pool)) void pool.agent.destroy().catch(() => {});
  }

  /** Closes every kept connection; later requests fail. In-flight ones are cut off. */
  async close(): Promise<void> {
    this.closed = true;
    const pools = [...this.pools.values(), ...this.retired];
    this.pools.clear();
    this.retired.clear();
    // destroy(), not close(): undici's destroy() no longer cuts off requests after a close().
    await Promise.all(pools.map((p) => p.agent.destroy().catch(() => {})));
  }

  /**
   * One request over the pool for `addresses`; the answer is read whole, so the connection is
   * free again once it returns. A kept connection can be closed by the other side just as a
   * request goes out on it (a receiver whose idle timeout is shorter than ours, without saying
   * so), and undici does not resend a POST: such a request is sent once more, on a connection of
   * its own, when its body can be sent again.
   */
  private async exchange(
    url: URL,
    addresses: readonly LookupAddress[],
    init: EgressRequestInit,
    signal: AbortSignal,
    what: string,
  ): Promise<Response> {
    const pool = this.poolFor(url, addresses, what);
    pool.active++;
    try {
      return await this.send(url, init, signal, what, pool.agent);
    } catch (e) {
      if (e instanceof EgressError || signal.aborted || !closedUnderneath(e) || init.body instanceof ReadableStream) throw e;
    } finally {
      this.leave(pool);
    }
    const own = this.pinnedAgent(addresses);
    try {
      return await this.send(url, init, signal, what, own);
    } finally {
      await own.destroy().catch(() => {});
    }
  }

  private async send(url: URL, init: EgressRequestInit, signal: AbortSignal, what: string, dispatcher: Agent): Promise<Response> {
    const res = await undiciFetch(url, {
      method: init.method ?? "GET",
      ...(init.headers ? { headers: init.headers } : {}),
      ...(init.body !== undefined ? { body: init.body } : {}),
      ...(init.duplex ? { duplex: init.duplex } : {}),
      signal,
      redirect: "manual",
      dispatcher,
    });
    if (res.status >= 300 && res.status < 400) {
      // An unread body would hold the connection.
      await res.body?.cancel().catch(() => {});
      throw new EgressError(
        "redirect",
        `${what}: answered ${res.status} to ${res.headers.get("location") ?? "nowhere"} (redirects are not followed)`,
      );
    }
    const body = await readBodyLimited(res, what, this.maxBytes);
    const headers = new Headers();
    for (const [name, value] of res.headers) if (!DROPPED_HEADERS.has(name)) headers.append(name, value);
    return new Response(NULL_BODY_STATUSES.has(res.status) ? null : body, { status: res.status, statusText: res.statusText, headers });
  }
}

interface BudgetLimit {
  key: string;
  maxInFlight: number;
}

/** GETs `url` through `fetch` and parses its 200 answer as JSON. */
async function getJson(fetch: EgressFetch, url: string | URL): Promise<unknown> {
  const res = await fetch(url, { headers: { accept: "application/json" } });
  const where = new URL(url);
  const what = `GET ${where.origin}${where.pathname}`;
  if (res.status !== 200) throw new EgressError("answer", `${what} answered ${res.status}`);
  const text = await res.text();
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new EgressError("answer", `${what} did not answer JSON`, { cause: e });
  }
}

const shuttingDown = (what: string) => new EgressError("network", `${what}: the server is shutting down`);

/** A failure of the connection itself before any answer: the other side closed or reset it. */
function closedUnderneath(e: unknown): boolean {
  for (let cur = e; cur instanceof Error; cur = cur.cause) {
    const code = (cur as NodeJS.ErrnoException).code;
    if (code === "UND_ERR_SOCKET" || code === "ECONNRESET" || code === "EPIPE") return true;
  }
  return false;
}
