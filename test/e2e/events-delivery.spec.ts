import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { EventsService, type Event } from "../../gen/platform/events/v2beta1/events_pb.js";
import { Grants } from "../../src/authz/index.js";
import { Egress } from "../../src/egress/index.js";
import { DELIVERIES_CHANNEL, WebhookDispatcher } from "../../src/events/index.js";
import { connectClient, grpcJsClient, restClient, type JsonObject } from "../support/clients.js";
import { COMPILED_SERVER, ensureCompiledServer } from "../support/compiled-server.js";
import { createFreshDatabase, postgresAdminUrl, type FreshDatabase } from "../support/database.js";
import { CREATOR_DELETED } from "../../src/events/index.js";
import { bind, bootstrapIdentityUid, createGroup, createIdentity, ok, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { copyPgliteTemplate, postgresTemplate } from "../support/store-templates.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

// Webhook delivery across failures and replicas (docs/design.md, "Webhooks"):
// a server killed between commit and delivery, two replicas sharing the work,
// and a watch fed by another replica. On PGlite (one process) the second
// replica is a second dispatcher on the same database, and the watch is fed by
// the one server.

const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function receiver(): Promise<WebhookReceiver> {
  const r = await WebhookReceiver.start();
  cleanups.push(() => r.stop());
  return r;
}

async function server(env: Record<string, string> = {}): Promise<TestServer> {
  const s = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true", PLATFORM_WEBHOOK_BACKOFF_MS: "50", ...env });
  cleanups.push(() => s.stop());
  return s;
}

const ids = (r: WebhookReceiver) => r.received.map((x) => x.headers["webhook-id"] as string);

/**
 * The server as an operator runs it (compiled, under plain node: tsx's start cost 1.5 core-seconds
 * more), in a process of its own that the test can kill outright.
 */
async function spawnServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
  ensureCompiledServer();
  const child = spawn(process.execPath, [COMPILED_SERVER], { env, stdio: ["ignore", "pipe", "pipe"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  let out = "";
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no port within 30 s: ${out}`)), 30_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.once("exit", (code) => reject(new Error(`the server exited (${code}): ${out}`)));
  });
  return { child, url: `http://127.0.0.1:${port}`, exited };
}

// The kill test spends most of its time waiting (for the server to start, and for the lease of the
// delivery it cut off to run out), the replicas test working: each has its own servers, store and
// receiver, so they run side by side.
describe.concurrent("deliveries", () => {
  describe("a server killed between commit and delivery", () => {
    it("delivers the event after it is restarted: nothing is lost", async () => {
      const dataDir = await mkdtemp(join(tmpdir(), "platform-kill-"));
      const admin = postgresAdminUrl();
      // Migrated stores (test/support/store-templates.ts): what is under test is the restart.
      const fresh: FreshDatabase | undefined = admin ? await createFreshDatabase(admin, undefined, postgresTemplate()) : undefined;
      if (!fresh) await copyPgliteTemplate(join(dataDir, "pglite"), "migrated");
      cleanups.push(async () => {
        await fresh?.drop();
        await rm(dataDir, { recursive: true, force: true });
      });
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        PORT: "0",
        HOST: "127.0.0.1",
        PLATFORM_DATA_DIR: dataDir,
        PLATFORM_ALLOW_INSECURE_ISSUERS: "true",
        // A claim's lease is 2 × 500 ms + 1 s: the restarted server takes the delivery over after it.
        PLATFORM_WEBHOOK_TIMEOUT_MS: "500",
        PLATFORM_WEBHOOK_BACKOFF_MS: "50",
        LOG_LEVEL: "info",
      };
      if (fresh) env["DATABASE_URL"] = fresh.url;
      else delete env["DATABASE_URL"];
      const hook = await receiver();
      // The first POST is never answered: the delivery is in flight when the server dies.
      hook.answer = (_r, n) => (n === 1 ? "hang" : 200);

      const first = await spawnServer(env);
      cleanups.push(async () => void first.child.kill("SIGKILL"));
      const token = (await readFile(join(dataDir, "admin-token"), "utf8")).trim();
      let call = restClient(first.url, token);
      const org = uidOf(await createGroup(call, "killed"));
      await ok(call("POST", `/events/v2beta1/subscriptions/${org}`, { sink: hook.url, types: ["platform.registry."] }));
      const repo = await ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "survivor" }));
      await hook.until((all) => all.length === 1);
      first.child.kill("SIGKILL");
      await first.exited;

      // The restart need not be a process of its own (what is under test is the kill): a server in
      // this process on the same store starts a second sooner.
      const second = await server({
        PLATFORM_DATA_DIR: dataDir,
        PLATFORM_WEBHOOK_TIMEOUT_MS: "500",
        ...(fresh ? { DATABASE_URL: fresh.url } : {}),
      });
      await hook.until((all) => all.length >= 2, 20_000);
      expect(new Set(ids(hook))).toEqual(new Set([ids(hook)[0]]));
      expect(hook.received[1]!.body).toContain(uidOf(repo));
      // A new port is a new base URL, so the restarted server wrote a new admin token.
      call = restClient(second.url, (await readFile(join(dataDir, "admin-token"), "utf8")).trim());
      const [subscription] = (await ok(call("GET", `/events/v2beta1/subscriptions?uidp.childrenOf=${org}`)))[
        "subscriptions"
      ] as JsonObject[];
      for (
        let i = 0;
        i < 100 && (await ok(call("GET", `/events/v2beta1/subscriptions/${uidOf(subscription!)}`)))["deliveredCount"] !== "1";
        i++
      ) {
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(await ok(call("GET", `/events/v2beta1/subscriptions/${uidOf(subscription!)}`))).toMatchObject({
        deliveredCount: "1",
        pendingCount: "0",
      });
    }, 90_000);
  });

  describe("two replicas", () => {
    it("deliver every event to one receiver exactly once (1,000 on PostgreSQL): no duplicate, no loss", async () => {
      // Everything here shares one event loop (client, receiver, replicas; PGlite's queries block it):
      // a generous delivery timeout keeps a slow loop from turning into a retry, which is a duplicate.
      const a = await server({ PLATFORM_WEBHOOK_TIMEOUT_MS: "30000" });
      const hook = await receiver();
      // The second replica: a server on the same PostgreSQL, or on PGlite a second dispatcher on the one database.
      let bUrl = a.url;
      if (a.backend === "postgres") bUrl = `http://127.0.0.1:${(await a.startReplica()).port}`;
      else {
        const second = new WebhookDispatcher({
          db: a.app.database.db,
          fetch: new Egress({ allowInsecure: true, timeoutMs: 30_000 }).fetch,
          secrets: a.app.secrets,
          grantsOf: (uid) => Grants.load(a.app.database.db, uid),
          clock: a.clock.now,
          backoffMs: 50,
          leaseMs: 61_000,
          onError: (e) => pino().error(e),
          onDeliveryError: () => {},
        });
        second.start();
        cleanups.push(() => second.stop());
        // Woken by the same notifications as the server's own dispatcher.
        const unlisten = await a.app.database.listen(
          DELIVERIES_CHANNEL,
          () => second.notify(),
          () => second.notify(),
        );
        cleanups.push(unlisten);
      }
      const callA = restClient(a.url, a.token);
      const callB = restClient(bUrl, a.token);
      const org = uidOf(await createGroup(callA, "replicas"));
      await ok(callA("POST", `/events/v2beta1/subscriptions/${org}`, { sink: hook.url, types: ["platform.registry.repo.created.v1"] }));

      // 1,000 on PostgreSQL, as two real replicas would; fewer on PGlite, whose one connection serves both dispatchers.
      const TOTAL = a.backend === "postgres" ? 1000 : 100;
      const subjects: string[] = [];
      let next = 0;
      // 16 writers, alternating between the replicas.
      await Promise.all(
        Array.from({ length: 16 }, async (_, w) => {
          while (next < TOTAL) {
            const n = next++;
            subjects.push(uidOf(await ok((w % 2 ? callB : callA)("POST", `/registry/v2beta1/repos/${org}`, { name: `r${n}` }))));
          }
        }),
      );
      await hook.until((all) => new Set(all.map((r) => r.headers["webhook-id"])).size >= TOTAL, 60_000);
      // Anything sent twice would arrive about as fast as the rest: give it a moment to show.
      await new Promise((r) => setTimeout(r, 500));
      const received = ids(hook);
      const duplicates = received.length - new Set(received).size;
      const delivered = new Set(hook.received.map((r) => (JSON.parse(r.body) as { subject: string }).subject));
      const lost = subjects.filter((s) => !delivered.has(s)).length;
      expect({ duplicates, lost, received: received.length }).toEqual({ duplicates: 0, lost: 0, received: TOTAL });
    }, 120_000);
  });
});

/** The subscription `uid` once `predicate` holds for it (polled for up to 10 s). */
async function subscriptionOnce(
  call: ReturnType<typeof restClient>,
  uid: string,
  predicate: (s: JsonObject) => boolean,
): Promise<JsonObject> {
  let status: JsonObject = {};
  for (let i = 0; i < 500; i++) {
    status = await ok(call("GET", `/events/v2beta1/subscriptions/${uid}`));
    if (predicate(status)) return status;
    await new Promise((r) => setTimeout(r, 20));
  }
  return status;
}

const mentions = (r: WebhookReceiver, text: string) => r.received.some((x) => x.body.includes(text));

// A subscription sends on its creator's behalf (docs/design.md, "Webhooks"): Carol, owner of a
// team, subscribes her own receiver; what she may no longer read must stop reaching it.
describe("subscriptions send for their creator", () => {
  /** A server, an organization with a team, Carol (owner of the team) and her token, and an admin's control receiver on the team. */
  async function carolsTeam(name: string) {
    const s = await server();
    const call = restClient(s.url, s.token);
    const org = uidOf(await createGroup(call, name));
    const team = uidOf(await createGroup(call, "team", org));
    const carol = uidOf(
      await createIdentity(call, org, { name: "carol", claimMatch: { issuer: "https://issuer.example", subject: `${name}-carol` } }),
    );
    const binding = uidOf(await ok(bind(call, team, carol, "owner")));
    const carolCall = restClient(s.url, (await s.app.tokens.mint(carol, s.app.urls.baseUrl)).token);
    const control = await receiver();
    await ok(call("POST", `/events/v2beta1/subscriptions/${team}`, { sink: control.url }));
    return { s, call, team, carol, binding, carolCall, control };
  }

  it("stops Carol's subscription when her binding is removed, saying why: no invite or identity made after reaches her receiver, until an owner's update takes it over", async () => {
    const { s, call, team, carol, binding, carolCall, control } = await carolsTeam("carol-unbound");
    const admin = bootstrapIdentityUid(s.token);
    const hers = await receiver();
    // creator and state are output only: naming another creator changes nothing.
    const made = await ok(
      carolCall("POST", `/events/v2beta1/subscriptions/${team}`, { sink: hers.url, creator: admin, state: "STATE_STOPPED" }),
    );
    expect(made).toMatchObject({ creator: carol, state: "STATE_ACTIVE" });
    await ok(call("POST", `/iam/v2beta1/groupInvites/${team}`, { roleUid: "viewer", ttl: "3600s", email: "before@example.com" }));
    await hers.until(() => mentions(hers, "before@example.com"));

    await ok(call("DELETE", `/iam/v2beta1/roleBindings/${binding}`));
    expect((await carolCall("GET", `/events/v2beta1/subscriptions/${uidOf(made)}`)).status).toBe(403);
    const stopped = await subscriptionOnce(call, uidOf(made), (x) => x["state"] === "STATE_STOPPED");
    expect(stopped).toMatchObject({ state: "STATE_STOPPED", creator: carol, pendingCount: "0" });
    expect(stopped["lastError"]).toContain(`(${carol}) may no longer list events in ${team}`);

    await ok(call("POST", `/iam/v2beta1/groupInvites/${team}`, { roleUid: "viewer", ttl: "3600s", email: "after@example.com" }));
    await createIdentity(call, team, { name: "after-robot", claimMatch: { issuer: "https://issuer.example", subject: "after-robot" } });
    await control.until(() => mentions(control, "after@example.com") && mentions(control, "after-robot"));
    // What the control receiver got, hers would have by now (same dispatcher, same server): she got neither.
    expect(mentions(hers, "after@example.com") || mentions(hers, "after-robot")).toBe(false);
    expect(await ok(call("GET", `/events/v2beta1/subscriptions/${uidOf(made)}`))).toMatchObject({
      state: "STATE_STOPPED",
      pendingCount: "0",
    });

    // An owner who updates it vouches for it now: it sends for them, from then on.
    expect(await ok(call("PATCH", `/events/v2beta1/subscriptions/${uidOf(made)}`, { description: "the admin's now" }))).toMatchObject({
      state: "STATE_ACTIVE",
      creator: admin,
    });
    await ok(call("POST", `/iam/v2beta1/groupInvites/${team}`, { roleUid: "viewer", ttl: "3600s", email: "resumed@example.com" }));
    await hers.until(() => mentions(hers, "resumed@example.com"));
    expect(mentions(hers, "after@example.com")).toBe(false);
  }, 60_000);

  it("stops Carol's subscription in the same transaction as her identity's delete: not even the deletes of her bindings reach her receiver", async () => {
    const { call, team, carol, carolCall, control } = await carolsTeam("carol-deleted");
    const hers = await receiver();
    const made = await ok(carolCall("POST", `/events/v2beta1/subscriptions/${team}`, { sink: hers.url }));
    expect(made).toMatchObject({ creator: carol, state: "STATE_ACTIVE" });

    await ok(call("DELETE", `/iam/v2beta1/identities/${carol}`));
    // Read at once after the delete's answer: nothing to wait for.
    expect(await ok(call("GET", `/events/v2beta1/subscriptions/${uidOf(made)}`))).toMatchObject({
      state: "STATE_STOPPED",
      lastError: CREATOR_DELETED,
      pendingCount: "0",
    });
    await createIdentity(call, team, { name: "later-robot", claimMatch: { issuer: "https://issuer.example", subject: "later-robot" } });
    await control.until(() => mentions(control, "platform.iam.role_binding.deleted.v1") && mentions(control, "later-robot"));
    // At most the subscription's own creation, sent before the delete.
    expect(
      hers.received
        .map((r) => (JSON.parse(r.body) as { type: string }).type)
        .filter((t) => t !== "platform.events.subscription.created.v1"),
    ).toEqual([]);
  }, 60_000);

  it("delivers another organization's event within 10 s while one organization's five subscriptions hang on their sink (a minute each)", async () => {
    const s = await server({ PLATFORM_WEBHOOK_TIMEOUT_MS: "60000" });
    const call = restClient(s.url, s.token);
    const hanging = await receiver();
    hanging.answer = () => "hang";
    const tenant = uidOf(await createGroup(call, "hanging-tenant"));
    for (let i = 0; i < 5; i++)
      await ok(
        call("POST", `/events/v2beta1/subscriptions/${tenant}`, { sink: hanging.url, types: ["platform.registry.repo.created.v1"] }),
      );
    // Ten deliveries each, fifty in all: more than every slot of the replica (32).
    for (let i = 0; i < 10; i++) await ok(call("POST", `/registry/v2beta1/repos/${tenant}`, { name: `held-${i}` }));
    // The organization's share of the slots (8), and no more.
    await hanging.until((all) => all.length >= 8);
    await new Promise((r) => setTimeout(r, 300));
    expect(hanging.received).toHaveLength(8);

    const other = uidOf(await createGroup(call, "other-tenant"));
    const fine = await receiver();
    await ok(call("POST", `/events/v2beta1/subscriptions/${other}`, { sink: fine.url, types: ["platform.registry.repo.created.v1"] }));
    const repo = await ok(call("POST", `/registry/v2beta1/repos/${other}`, { name: "not-held" }));
    await fine.until((all) => all.length === 1, 10_000);
    expect(fine.received[0]!.body).toContain(uidOf(repo));
  }, 60_000);
});

describe("WatchEvents across replicas", () => {
  it("receives over grpc-js and over Connect a change made on another replica", async () => {
    const a = await server();
    const watched = a.backend === "postgres" ? await a.startReplica() : a.app;
    const watchUrl = `http://127.0.0.1:${watched.port}`;
    const org = uidOf(await createGroup(restClient(a.url, a.token), "watched"));

    const abort = new AbortController();
    const viaConnect = (async () => {
      const client = connectClient(EventsService, watchUrl, a.token);
      for await (const e of client.watchEvents({ uidp: { inRoot: org } }, { signal: abort.signal })) return e;
      return undefined;
    })();
    const grpcClient = grpcJsClient(
      `127.0.0.1:${watched.port}`,
      "platform.events.v2beta1.EventsService",
      "platform/events/v2beta1/events.proto",
    );
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${a.token}`);
    const stream = (grpcClient["WatchEvents"] as (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<JsonObject>).call(
      grpcClient,
      { uidp: { in_root: org } },
      md,
    );
    const viaGrpc = new Promise<JsonObject>((resolve, reject) => {
      stream.once("data", (e: JsonObject) => {
        resolve(e);
        stream.cancel();
      });
      stream.on("error", (e: grpc.ServiceError) => {
        if (e.code !== grpc.status.CANCELLED) reject(e);
      });
    });
    stream.on("error", () => {});
    for (let i = 0; i < 100 && watched.eventHub.size < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(watched.eventHub.size).toBe(2);

    const repo = await ok(restClient(a.url, a.token)("POST", `/registry/v2beta1/repos/${org}`, { name: "seen-elsewhere" }));
    const [connectEvent, grpcEvent] = await Promise.all([viaConnect, viaGrpc]);
    grpcClient.close();
    abort.abort();
    expect((connectEvent as Event).subject).toBe(uidOf(repo));
    expect(grpcEvent).toMatchObject({ type: "platform.registry.repo.created.v1", subject: uidOf(repo), group: org });
  }, 60_000);

  it("ends every stream when the server shuts down, and refuses a watch without a token", async () => {
    // Stopped by the test itself, not by the cleanups.
    const a = await startTestServer();
    const anonymous = connectClient(EventsService, a.url, "");
    const refused = (async () => {
      for await (const e of anonymous.watchEvents({})) return e;
    })();
    await expect(refused).rejects.toMatchObject({ code: Code.Unauthenticated });
    const client = connectClient(EventsService, a.url, a.token);
    const ended = (async () => {
      const got: Event[] = [];
      for await (const e of client.watchEvents({})) got.push(e);
      return got;
    })().catch((e: unknown) => e);
    for (let i = 0; i < 100 && a.app.eventHub.size < 1; i++) await new Promise((r) => setTimeout(r, 20));
    const closing = a.stop();
    const outcome = await ended;
    await closing;
    // A clean end of stream, or the connection going with the server; never a hang.
    expect(Array.isArray(outcome) || outcome instanceof ConnectError).toBe(true);
  }, 60_000);
});
