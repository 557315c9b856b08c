import net from "node:net";
import type { AddressInfo } from "node:net";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GroupsService } from "../../gen/platform/iam/v2beta1/groups_pb.js";
import { connectClient, restClient } from "../support/clients.js";
import { createFreshDatabase, postgresAdminUrl, type FreshDatabase } from "../support/database.js";
import { createGroup, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

// A database outage is something clients should retry, not a bug: every
// protocol answers UNAVAILABLE (HTTP 503 with Retry-After), never INTERNAL,
// and everything works again once the database is back. The outage is a
// TCP proxy between the server and PostgreSQL that the test cuts and
// restores, so no other suite's database goes away. (Always PostgreSQL: the
// embedded PGlite cannot become unreachable.)

const PG_URL = postgresAdminUrl() ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** A TCP proxy to PostgreSQL that can be cut (listener closed, connections reset) and restored on the same port. */
class CuttableProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.once("close", () => this.sockets.delete(s));
        s.on("error", () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

let db: FreshDatabase;
let proxy: CuttableProxy;
let server: TestServer;
let group: string;
let stopped = false;

beforeAll(async () => {
  db = await createFreshDatabase(PG_URL);
  const target = new URL(db.url);
  proxy = new CuttableProxy({ host: target.hostname, port: Number(target.port || 5432) });
  await proxy.start();
  const proxied = new URL(db.url);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(proxy.port);
  server = await startTestServer({ DATABASE_URL: proxied.toString() });
  group = uidOf(await createGroup(restClient(server.url, server.token), "outage"));
}, 60_000);
afterAll(async () => {
  // The test stops the server itself, unless it failed first.
  if (!stopped) await server?.stop();
  await proxy?.cut();
  await db?.drop();
});

interface Outcome {
  protocol: string;
  status: number;
  retryAfter: string | null;
}

async function probe(): Promise<Outcome[]> {
  const rest = await fetch(`${server.url}/iam/v2beta1/groups/${group}`, {
    headers: { authorization: `Bearer ${server.token}` },
    signal: AbortSignal.timeout(15_000),
  });
  await rest.text();
  const out: Outcome[] = [{ protocol: "rest", status: rest.status, retryAfter: rest.headers.get("retry-after") }];
  for (const protocol of ["grpc", "connect"] as const) {
    const client = connectClient(GroupsService, server.url, server.token, protocol);
    const code = await client.getGroup({ uid: group }, { timeoutMs: 15_000 }).then(
      () => 0,
      (e: unknown) => ConnectError.from(e).code,
    );
    out.push({ protocol, status: code, retryAfter: null });
  }
  return out;
}

describe("a database outage", () => {
  it("is UNAVAILABLE (503 with Retry-After) on every protocol while it lasts, and every call succeeds after", async () => {
    expect((await probe()).map((o) => o.status)).toEqual([200, 0, 0]);

    await proxy.cut();
    const during: Outcome[] = [];
    // A bounded burst of calls while the database is away.
    for (let i = 0; i < 5; i++) during.push(...(await probe()));
    for (const o of during) {
      if (o.protocol === "rest") {
        expect(o.status, JSON.stringify(o)).toBe(503);
        expect(o.retryAfter).toBe("2");
      } else {
        expect(o.status, JSON.stringify(o)).toBe(Code.Unavailable);
      }
    }
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    await proxy.start();
    // The pool reconnects on the next query: from the first success on, every call succeeds.
    let recovered = false;
    for (let i = 0; i < 50 && !recovered; i++) {
      recovered = (await probe()).every((o) => o.status === 200 || o.status === 0);
      if (!recovered) await new Promise((r) => setTimeout(r, 200));
    }
    expect(recovered).toBe(true);
    for (let i = 0; i < 5; i++) expect((await probe()).map((o) => o.status)).toEqual([200, 0, 0]);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);

    // The connections the outage broke do not hold the shutdown up: the driver's graceful end
    // waited for them until its 5 s timeout.
    const stopping = performance.now();
    stopped = true;
    await server.stop();
    expect(performance.now() - stopping).toBeLessThan(4000);
  }, 120_000);
});
