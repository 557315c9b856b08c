import { execFileSync } from "node:child_process";
import type { LookupAddress } from "node:dns";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import tls from "node:tls";
import { gzipSync } from "node:zlib";
import type * as client from "openid-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Egress, type EgressOptions } from "./egress.js";
import { EgressError, type EgressFailure } from "./egress-error.js";
import { pinnedLookup, type PinnedConnect, type PinnedTarget, type Resolve } from "./pinned-connect.js";

// No test here sends a packet beyond loopback: refused addresses are caught
// before any connection, and where a request would go to a public address a
// connect spy stands in for the socket.

interface LocalServer {
  /** The port on `host`. */
  port: number;
  requests(): number;
  hostHeaders: string[];
  stop(): Promise<void>;
}

async function localServer(handler: http.RequestListener, host = "127.0.0.1"): Promise<LocalServer> {
  let count = 0;
  const hostHeaders: string[] = [];
  const server = http.createServer((req, res) => {
    count++;
    hostHeaders.push(req.headers.host ?? "");
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    requests: () => count,
    hostHeaders,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const json =
  (body: unknown, status = 200): http.RequestListener =>
  (_req, res) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };

/** A resolver that answers from `table` (one answer list per call, the last repeating) and counts its calls. */
function fakeResolver(table: Record<string, string[][]>): Resolve & { calls: string[] } {
  const calls: string[] = [];
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    calls.push(hostname);
    const answers = table[hostname];
    if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    const answer = answers[Math.min(calls.filter((h) => h === hostname).length, answers.length) - 1] ?? [];
    return answer.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
  };
  return Object.assign(resolve, { calls });
}

/** Stands in for the socket: records where the connection would go (through the pinned lookup) and fails it. */
function connectSpy(): PinnedConnect & { targets: PinnedTarget[]; lookedUp: string[] } {
  const targets: PinnedTarget[] = [];
  const lookedUp: string[] = [];
  const connect: PinnedConnect = (target, callback) => {
    targets.push(target);
    pinnedLookup(target.hostname, target.addresses)(target.hostname, { all: true }, (err, addresses) => {
      if (err) throw err;
      for (const a of addresses as LookupAddress[]) lookedUp.push(a.address);
    });
    callback(new Error("connect spy: no packet sent"), null);
  };
  return Object.assign(connect, { targets, lookedUp });
}

async function failure(p: Promise<unknown>): Promise<EgressError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(EgressError);
  return e as EgressError;
}

const guard = (opts: Partial<EgressOptions> = {}) => new Egress({ allowInsecure: false, ...opts });

describe("Egress: refused requests are never sent", () => {
  let server: LocalServer;
  beforeAll(async () => {
    server = await localServer(json({ ok: true }));
  });
  afterAll(() => server.stop());

  it("refuses private, link-local and loopback literals before resolving or connecting", async () => {
    const resolve = fakeResolver({});
    const connect = connectSpy();
    const egress = guard({ resolve, connect });
    const refused: [string, EgressFailure][] = [
      ["https://10.0.0.1/.well-known/openid-configuration", "url"],
      ["https://169.254.169.254/latest/meta-data/", "url"],
      ["https://[fd00:ec2::254]/latest/meta-data/", "url"],
      ["https://[::ffff:169.254.169.254]/", "url"],
      [`http://[::1]:${server.port}/`, "url"],
      [`https://[::1]:${server.port}/`, "url"],
      [`http://127.0.0.1:${server.port}/`, "url"],
      [`https://127.0.0.1:${server.port}/`, "url"],
    ];
    for (const [url, why] of refused) {
      expect((await failure(egress.fetch(url))).failure, url).toBe(why);
      expect((await failure(egress.fetchJson(url))).failure, url).toBe(why);
    }
    expect(resolve.calls).toEqual([]);
    expect(connect.targets).toEqual([]);
    expect(server.requests()).toBe(0);
  });

  it("refuses a host name that resolves to loopback, and one with any non-public address among public ones", async () => {
    const resolve = fakeResolver({
      "internal.example": [["127.0.0.1"]],
      "mixed.example": [["93.184.216.34", "10.0.0.5"]],
      "mapped.example": [["2606:4700::1", "::ffff:169.254.169.254"]],
      "nowhere.example": [[]],
    });
    const connect = connectSpy();
    const egress = guard({ resolve, connect });
    const internal = await failure(egress.fetch(`https://internal.example:${server.port}/`));
    expect(internal.failure).toBe("address");
    expect(internal.message).toContain("127.0.0.1 (loopback)");
    expect((await failure(egress.fetch("https://mixed.example/"))).message).toContain("10.0.0.5 (private)");
    expect((await failure(egress.fetch("https://mapped.example/"))).message).toContain("(linkLocal)");
    expect((await failure(egress.fetch("https://nowhere.example/"))).message).toContain("has no address");
    expect((await failure(egress.fetch("https://unknown.example/"))).message).toContain("did not resolve");
    expect(resolve.calls).toEqual(["internal.example", "mixed.example", "mapped.example", "nowhere.example", "unknown.example"]);
    expect(connect.targets).toEqual([]);
  });

  it("with the real connector too: a loopback server is never reached without the development flag", async () => {
    const resolve = fakeResolver({ localhost: [["127.0.0.1"]] });
    const egress = guard({ resolve });
    for (const url of [`https://localhost:${server.port}/`, `http://localhost:${server.port}/`, `http://127.0.0.1:${server.port}/`]) {
      await failure(egress.fetch(url));
    }
    expect(server.requests()).toBe(0);
  });

  it("with the development flag, allows loopback but still refuses private and link-local", async () => {
    const resolve = fakeResolver({
      "metadata.example": [["169.254.169.254"]],
      "lan.example": [["192.168.1.10"]],
      "cgnat.example": [["100.64.1.1"]],
    });
    const connect = connectSpy();
    const egress = guard({ allowInsecure: true, resolve, connect });
    for (const host of ["metadata.example", "lan.example", "cgnat.example"]) {
      expect((await failure(egress.fetch(`http://${host}/`))).failure).toBe("address");
    }
    for (const url of ["http://10.0.0.1/", "http://169.254.169.254/", "http://[fe80::1]/", "http://[fc00::1]/", "http://0.0.0.0/"]) {
      expect((await failure(egress.fetch(url))).failure).toBe("url");
    }
    expect(connect.targets).toEqual([]);
    await expect(guard({ allowInsecure: true }).fetchJson(`http://127.0.0.1:${server.port}/`)).resolves.toEqual({ ok: true });
  });
});

describe("Egress: connects to the address it checked", () => {
  it("a rebinding resolver (public, then loopback) never leads to a connection to loopback", async () => {
    const resolve = fakeResolver({ "rebind.example": [["93.184.216.34"], ["127.0.0.1"]] });
    const connect = connectSpy();
    const egress = guard({ resolve, connect });
    // The first request resolves once and connects (here: the spy) only to what it checked.
    expect((await failure(egress.fetch("https://rebind.example/.well-known/openid-configuration"))).failure).toBe("network");
    expect(resolve.calls).toEqual(["rebind.example"]);
    expect(connect.targets).toHaveLength(1);
    expect(connect.targets[0]).toMatchObject({ hostname: "rebind.example", protocol: "https:" });
    expect(connect.lookedUp).toEqual(["93.184.216.34"]);
    // The second resolves again and is refused before connecting.
    expect((await failure(egress.fetch("https://rebind.example/jwks"))).failure).toBe("address");
    expect(connect.targets).toHaveLength(1);
    expect(connect.lookedUp).not.toContain("127.0.0.1");
  });

  it("the real connector goes to the pinned address, not to what the system resolver says", async () => {
    // The system says localhost is 127.0.0.1 or ::1; only the pin can lead to 127.0.0.2.
    const server = await localServer(json({ pinned: true }), "127.0.0.2");
    try {
      const resolve = fakeResolver({ localhost: [["127.0.0.2"]] });
      const egress = guard({ allowInsecure: true, resolve });
      await expect(egress.fetchJson(`http://localhost:${server.port}/`)).resolves.toEqual({ pinned: true });
      expect(server.hostHeaders).toEqual([`localhost:${server.port}`]);
      expect(resolve.calls).toEqual(["localhost"]);
    } finally {
      await server.stop();
    }
  });

  it.skipIf(!existsSync("/usr/bin/openssl"))("keeps TLS on the host name: SNI is the name and the certificate is verified", async () => {
    const dir = mkdtempSync(join(tmpdir(), "egress-tls-"));
    const servernames: string[] = [];
    try {
      const args = [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
      ];
      execFileSync("/usr/bin/openssl", [...args, "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem")], { stdio: "ignore" });
      const pem = { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
      const context = tls.createSecureContext(pem);
      const snis = tls.createServer({
        ...pem,
        SNICallback: (name, cb) => {
          servernames.push(name);
          cb(null, context);
        },
      });
      snis.on("tlsClientError", () => undefined); // the client refusing the certificate is the point
      await new Promise<void>((resolve) => snis.listen(0, "127.0.0.2", () => resolve()));
      try {
        const port = (snis.address() as AddressInfo).port;
        const egress = guard({ allowInsecure: true, resolve: fakeResolver({ localhost: [["127.0.0.2"]] }) });
        const e = await failure(egress.fetch(`https://localhost:${port}/`));
        expect(e.failure).toBe("network");
        expect(e.message).toMatch(/self[- ]signed/);
        expect(servernames).toEqual(["localhost"]);
      } finally {
        await new Promise<void>((resolve) => snis.close(() => resolve()));
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("Egress: bounded", () => {
  it("fails a request whose signal has already aborted, and the lookup it started cannot become an unhandled rejection", async () => {
    let failLookup!: (e: Error) => void;
    const egress = guard({ resolve: () => new Promise((_, reject) => (failLookup = reject)) });
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      await expect(egress.fetch("https://late.example/", { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(EgressError);
      failLookup(new Error("the name server answered after all"));
      await new Promise((r) => setTimeout(r, 20));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  const big = "x".repeat(300 * 1024);
  let server: LocalServer;
  let hits: Record<string, number>;
  beforeAll(async () => {
    hits = {};
    server = await localServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      hits[path] = (hits[path] ?? 0) + 1;
      switch (path) {
        case "/declared":
          res.writeHead(200, { "content-length": String(big.length) });
          return res.end(big);
        case "/chunked":
          res.writeHead(200, { "content-type": "application/json" });
          for (let i = 0; i < 30; i++) res.write("x".repeat(10 * 1024));
          return res.end();
        case "/bomb":
          res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/json" });
          return res.end(gzipSync(Buffer.alloc(10 * 1024 * 1024, 0x20)));
        case "/small-gzip":
          res.writeHead(200, { "content-encoding": "gzip", "content-type": "application/json" });
          return res.end(gzipSync(JSON.stringify({ small: true })));
        case "/silent":
          return; // never answers
        case "/trickle":
          res.writeHead(200, { "content-type": "application/json" });
          return res.write("{"); // headers, then nothing
        case "/redirect":
          res.writeHead(302, { location: `http://127.0.0.1:${server.port}/target`, "content-type": "text/html" });
          return res.end("<a href=/target>moved</a>");
        case "/echo": {
          const chunks: Buffer[] = [];
          req.on("data", (c: Buffer) => chunks.push(c));
          req.on("end", () =>
            json({
              method: req.method,
              type: req.headers["content-type"],
              auth: req.headers.authorization,
              body: Buffer.concat(chunks).toString(),
            })(req, res),
          );
          return;
        }
        case "/empty":
          res.writeHead(204);
          return res.end();
        case "/missing":
          return json({ error: "not_found" }, 404)(req, res);
        case "/html":
          res.writeHead(200, { "content-type": "text/html" });
          return res.end("<html>");
        default:
          return json({ path })(req, res);
      }
    });
  });
  afterAll(() => server.stop());

  const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
  const dev = (opts: Partial<EgressOptions> = {}) => guard({ allowInsecure: true, ...opts });

  it("caps the response size: by content-length, while streaming, and after decompression", async () => {
    const egress = dev({ maxBytes: 256 * 1024 });
    for (const path of ["/declared", "/chunked", "/bomb"]) {
      const e = await failure(egress.fetch(url(path)));
      expect(e.failure, path).toBe("too_large");
    }
    await expect(egress.fetchJson(url("/small-gzip"))).resolves.toEqual({ small: true });
    await expect(
      dev({ maxBytes: 400 * 1024 })
        .fetch(url("/declared"))
        .then((r) => r.text()),
    ).resolves.toHaveLength(big.length);
  });

  it("gives up after the timeout: no answer, or a body that never ends", async () => {
    const egress = dev({ timeoutMs: 300 });
    const started = Date.now();
    const [silent, trickle] = await Promise.all(["/silent", "/trickle"].map((path) => failure(egress.fetch(url(path)))));
    expect([silent!.failure, trickle!.failure]).toEqual(["timeout", "timeout"]);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("never follows a redirect", async () => {
    const e = await failure(dev().fetch(url("/redirect")));
    expect(e.failure).toBe("redirect");
    expect(hits["/target"]).toBeUndefined();
  });

  it("fails fast beyond the concurrency cap, and frees the slot afterwards", async () => {
    const egress = dev({ maxInFlight: 2, timeoutMs: 500 });
    const slow = [failure(egress.fetch(url("/silent"))), failure(egress.fetch(url("/silent")))];
    const busy = await failure(egress.fetch(url("/ok")));
    expect(busy.failure).toBe("busy");
    expect(hits["/ok"]).toBeUndefined();
    expect((await Promise.all(slow)).map((e) => e.failure)).toEqual(["timeout", "timeout"]);
    await expect(egress.fetchJson(url("/ok"))).resolves.toEqual({ path: "/ok" });
  });

  it("budgets: one budget at its cap fails fast while another budget still goes out", async () => {
    const egress = dev({ maxInFlight: 10, timeoutMs: 500 });
    const okBefore = hits["/ok"] ?? 0;
    const a = egress.budget("a", 2);
    const slow = [failure(a.fetch(url("/silent"))), failure(a.fetch(url("/silent")))];
    const busy = await failure(a.fetchJson(url("/ok")));
    expect(busy.failure).toBe("busy");
    expect(busy.message).toContain("budget a");
    expect(hits["/ok"] ?? 0).toBe(okBefore);
    // Another budget, and the same key made again (a budget is its key), see their own counts.
    await expect(egress.budget("b", 2).fetchJson(url("/ok"))).resolves.toEqual({ path: "/ok" });
    expect((await failure(egress.budget("a", 2).fetch(url("/ok")))).failure).toBe("busy");
    expect((await Promise.all(slow)).map((e) => e.failure)).toEqual(["timeout", "timeout"]);
    await expect(a.fetchJson(url("/ok"))).resolves.toEqual({ path: "/ok" });
  });

  it("budgets: a budget within another counts against both, and the guard's cap bounds them all", async () => {
    const egress = dev({ maxInFlight: 3, timeoutMs: 500 });
    const okBefore = hits["/ok"] ?? 0;
    const tenants = egress.budget("tenants", 2);
    const one = tenants.within("one", 1);
    expect(one.key).toBe("tenants/one");
    const held = [failure(one.fetch(url("/silent")))];
    expect((await failure(one.fetch(url("/ok")))).failure).toBe("busy");
    held.push(failure(tenants.within("two", 1).fetch(url("/silent"))));
    // Both tenants' shares are free, but all tenants' is spent.
    const three = await failure(tenants.within("three", 1).fetch(url("/ok")));
    expect(three.message).toContain("budget tenants already");
    // A budget outside them still goes out; then the guard's own cap is reached.
    held.push(failure(egress.budget("reserved", 5).fetch(url("/silent"))));
    expect((await failure(egress.budget("reserved", 5).fetch(url("/ok")))).message).toContain("3 outbound requests already in flight");
    expect(hits["/ok"] ?? 0).toBe(okBefore);
    expect((await Promise.all(held)).map((e) => e.failure)).toEqual(["timeout", "timeout", "timeout"]);
    await expect(tenants.within("three", 1).fetchJson(url("/ok"))).resolves.toEqual({ path: "/ok" });
  });

  it("reports a refused connection as a network failure whose message is for the log", async () => {
    const closed = await localServer(json({}));
    await closed.stop();
    const e = await failure(dev().fetch(`http://127.0.0.1:${closed.port}/`));
    expect(e.failure).toBe("network");
    expect(e.message).toContain("ECONNREFUSED");
    expect(e.cause).toBeInstanceOf(Error);
  });

  it("fetchJson wants a 200 JSON answer", async () => {
    expect((await failure(dev().fetchJson(url("/missing")))).failure).toBe("answer");
    expect((await failure(dev().fetchJson(url("/html")))).failure).toBe("answer");
  });

  it("is a fetch openid-client can use: method, headers and body go through, and the answer is a whole Response", async () => {
    const egress = dev();
    const customFetch: client.CustomFetch = egress.fetch;
    const res = await customFetch(url("/echo"), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Basic Y2xpZW50OnNlY3JldA==" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: "abc" }),
      redirect: "manual",
    });
    expect(res).toBeInstanceOf(Response);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      method: "POST",
      type: "application/x-www-form-urlencoded",
      auth: "Basic Y2xpZW50OnNlY3JldA==",
      body: "grant_type=authorization_code&code=abc",
    });
    const missing = await egress.fetch(url("/missing"));
    expect([missing.status, await missing.json()]).toEqual([404, { error: "not_found" }]);
    const empty = await egress.fetch(url("/empty"));
    expect([empty.status, await empty.text()]).toEqual([204, ""]);
  });
});

/** A loopback server that counts the connections made to it and those still open. */
async function connectionCounter(host = "127.0.0.1"): Promise<{ port: number; made(): number; open(): number; stop(): Promise<void> }> {
  let made = 0;
  const open = new Set<import("node:net").Socket>();
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    if (path === "/redirect") {
      res.writeHead(302, { location: "/elsewhere", "content-type": "text/html" });
      return res.end("<p>moved</p>".repeat(10_000));
    }
    if (path === "/slow") {
      setTimeout(() => json({ path })(req, res), 200);
      return;
    }
    if (path === "/large") {
      res.writeHead(200, { "content-type": "application/json" });
      for (let i = 0; i < 100; i++) res.write("x".repeat(1024));
      return res.end();
    }
    json({ path })(req, res);
  });
  server.on("connection", (socket) => {
    made++;
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, host, () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    made: () => made,
    open: () => open.size,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function eventually(check: () => boolean, ms = 2_000): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 10))) if (check()) return true;
  return check();
}

// Each case has its servers and guard of its own, and most of their time is waiting: side by side.
describe.concurrent("Egress: keeps connections for the next request", () => {
  it("reuses connections per origin and checked addresses; a different answer gets a connection of its own", async () => {
    const server = await connectionCounter("127.0.0.2");
    const first = ["127.0.0.2"];
    const resolve = fakeResolver({ localhost: [first, first, first, first, first, ["127.0.0.2", "127.0.0.3"], first] });
    const egress = guard({ allowInsecure: true, resolve });
    try {
      const url = `http://localhost:${server.port}/ok`;
      for (let i = 0; i < 5; i++) await expect(egress.fetchJson(url)).resolves.toEqual({ path: "/ok" });
      // A request can start before the one before it has handed its connection back: a second one, at most.
      const made = server.made();
      expect(made).toBeLessThanOrEqual(2);
      // Another set of addresses: the pool pinned to the first set is not used for it.
      await expect(egress.fetchJson(url)).resolves.toEqual({ path: "/ok" });
      expect(server.made()).toBe(made + 1);
      // The first set again: its pool and connections are still there.
      await expect(egress.fetchJson(url)).resolves.toEqual({ path: "/ok" });
      expect(server.made()).toBe(made + 1);
      expect(resolve.calls).toHaveLength(7);
    } finally {
      await egress.close();
      await server.stop();
    }
  });

  it("a refused redirect or an answer over the size cap does not hold its connection", async () => {
    const server = await connectionCounter();
    const egress = guard({ allowInsecure: true, maxBytes: 1024 });
    try {
      const url = (path: string) => `http://127.0.0.1:${server.port}${path}`;
      for (let i = 0; i < 10; i++) expect((await failure(egress.fetch(url("/redirect")))).failure).toBe("redirect");
      for (let i = 0; i < 10; i++) expect((await failure(egress.fetch(url("/large")))).failure).toBe("too_large");
      await expect(egress.fetchJson(url("/ok"))).resolves.toEqual({ path: "/ok" });
      // An answer left unread would keep its connection open, busy: ten of them here.
      expect(await eventually(() => server.open() <= 2)).toBe(true);
    } finally {
      await egress.close();
      await server.stop();
    }
  });

  it("keeps so many pools, closing the least recently used one's connections", async () => {
    const servers = await Promise.all([connectionCounter(), connectionCounter(), connectionCounter()]);
    const egress = guard({ allowInsecure: true, maxPools: 2 });
    try {
      const [a, b, c] = servers.map((s) => `http://127.0.0.1:${s.port}/ok`) as [string, string, string];
      for (const url of [a, b, a, c]) await egress.fetchJson(url);
      // a was used after b: b's pool is the one closed when c's is made.
      expect(await eventually(() => servers[1]!.open() === 0)).toBe(true);
      expect([servers[0]!.open(), servers[2]!.open()]).toEqual([1, 1]);
      await egress.fetchJson(a);
      expect(servers[0]!.made()).toBe(1);
    } finally {
      await egress.close();
      await Promise.all(servers.map((s) => s.stop()));
    }
  });

  it("close() ends the kept connections, and a later request fails without being sent", async () => {
    const server = await connectionCounter();
    const egress = guard({ allowInsecure: true });
    try {
      const url = `http://127.0.0.1:${server.port}/ok`;
      await egress.fetchJson(url);
      expect(server.open()).toBe(1);
      await egress.close();
      expect(await eventually(() => server.open() === 0)).toBe(true);
      expect((await failure(egress.fetch(url))).failure).toBe("network");
      expect(server.made()).toBe(1);
    } finally {
      await server.stop();
    }
  });

  it("sends a request again on a connection of its own when the other side closed the kept one as it went out", async () => {
    // A receiver that answers a connection's first request and drops it at the second, as one whose
    // idle timeout ran out just then would.
    let made = 0;
    let requests = 0;
    const server = http.createServer((req, res) => {
      requests++;
      const socket = req.socket as import("node:net").Socket & { served?: number };
      socket.served = (socket.served ?? 0) + 1;
      if (socket.served > 1) return socket.destroy();
      req.resume();
      req.on("end", () => json({ n: requests })(req, res));
    });
    server.on("connection", () => made++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const egress = guard({ allowInsecure: true });
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const post = () => egress.fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      expect((await post()).status).toBe(200);
      // Until the kept connection is idle again.
      await new Promise((r) => setTimeout(r, 50));
      const second = await post();
      expect([second.status, await second.json()]).toEqual([200, { n: 3 }]);
      expect([made, requests]).toEqual([2, 3]);
    } finally {
      await egress.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("a pool pushed out while it carries a request closes its connection once that request is done", async () => {
    const slow = await connectionCounter();
    const other = await connectionCounter();
    const egress = guard({ allowInsecure: true, maxPools: 1 });
    try {
      const answered = egress.fetchJson(`http://127.0.0.1:${slow.port}/slow`);
      await new Promise((r) => setTimeout(r, 50));
      await egress.fetchJson(`http://127.0.0.1:${other.port}/ok`);
      await expect(answered).resolves.toEqual({ path: "/slow" });
      // Kept, its connection would stay open for the keep-alive's 4 s.
      expect(await eventually(() => slow.open() === 0, 1_000)).toBe(true);
      expect(other.open()).toBe(1);
    } finally {
      await egress.close();
      await Promise.all([slow.stop(), other.stop()]);
    }
  });

  it("close() also cuts off a request that a pool pushed out of the kept ones still carries", async () => {
    const servers = await Promise.all([connectionCounter(), connectionCounter()]);
    const hanging = http.createServer(() => {});
    await new Promise<void>((resolve) => hanging.listen(0, "127.0.0.1", () => resolve()));
    const egress = guard({ allowInsecure: true, maxPools: 1, timeoutMs: 5_000 });
    try {
      const started = Date.now();
      const cut = failure(egress.fetch(`http://127.0.0.1:${(hanging.address() as AddressInfo).port}/never`));
      await new Promise((r) => setTimeout(r, 50));
      // Another origin: the hanging request's pool is pushed out, and finishes what it carries.
      await egress.fetchJson(`http://127.0.0.1:${servers[0]!.port}/ok`);
      await egress.close();
      expect((await cut).failure).toBe("network");
      expect(Date.now() - started).toBeLessThan(2_000);
    } finally {
      hanging.closeAllConnections();
      await new Promise<void>((resolve) => hanging.close(() => resolve()));
      await Promise.all(servers.map((s) => s.stop()));
    }
  });

  it("a request still resolving its name when close() runs fails, and leaves no pool behind", async () => {
    const server = await connectionCounter();
    let answer!: (addresses: LookupAddress[]) => void;
    const egress = guard({ allowInsecure: true, resolve: () => new Promise((resolve) => (answer = resolve)) });
    try {
      const pending = failure(egress.fetch(`http://slow.example:${server.port}/ok`));
      await egress.close();
      answer([{ address: "127.0.0.1", family: 4 }]);
      expect((await pending).message).toContain("shutting down");
      expect(server.made()).toBe(0);
    } finally {
      await server.stop();
    }
  });
});
