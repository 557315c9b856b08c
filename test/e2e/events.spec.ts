import { setMaxListeners } from "node:events";
import grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@connectrpc/connect";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QuotaFailureSchema } from "../../gen/google/rpc/error_details_pb.js";
import { EventsService, type Event } from "../../gen/platform/events/v2beta1/events_pb.js";
import { findOrCreatePersonIdentity } from "../../src/auth/login/person-identity.js";
import { MAX_STREAMS_PER_ORGANIZATION } from "../../src/services/events/events.js";
import { MAX_SUBSCRIPTIONS_PER_ORGANIZATION } from "../../src/services/events/subscriptions.js";
import { connectClient, grpcJsClient, restClient, type JsonObject, type RestClient } from "../support/clients.js";
import { bind, bootstrapIdentityUid, createGroup, createIdentity, expectInvalid, ok, restDetail, uidOf } from "../support/rest-iam.js";
import { startOidcProvider } from "../support/oidc-provider.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { WebhookReceiver } from "../support/webhook-receiver.js";

// Events and webhooks (docs/events.md, "Events and webhooks") on a server that may
// send to loopback (development) and retries after 50 ms.

let server: TestServer;
let call: RestClient;
let receiver: WebhookReceiver;
let admin = "";

beforeAll(async () => {
  server = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true", PLATFORM_WEBHOOK_BACKOFF_MS: "50" });
  call = restClient(server.url, server.token);
  admin = bootstrapIdentityUid(server.token);
  receiver = await WebhookReceiver.start();
});

afterAll(async () => {
  await receiver?.stop();
  await server?.stop();
});

/** An organization with an identity, and a fresh receiver subscribed to it (types: the prefixes given). */
async function orgWithIdentity(name: string) {
  const org = uidOf(await createGroup(call, name));
  const identity = uidOf(
    await createIdentity(call, org, { name: `${name}-robot`, claimMatch: { issuer: "https://issuer.example", subject: `${name}-robot` } }),
  );
  return { org, identity };
}

async function subscribe(org: string, sink: string, types: string[] = []): Promise<JsonObject> {
  return ok(call("POST", `/events/v2beta1/subscriptions/${org}`, { sink, types, description: "test receiver" }));
}

async function listEvents(query: string, token = server.token): Promise<JsonObject> {
  return ok(restClient(server.url, token)("GET", `/events/v2beta1/events?${query}`));
}

const eventsOf = (body: JsonObject) => body["events"] as JsonObject[];

describe("ListEvents", () => {
  it("shows a binding created through REST with its actor, group, type and the binding as data", async () => {
    const { org, identity } = await orgWithIdentity("events-binding");
    const binding = await ok(bind(call, org, identity, "viewer"));
    const body = await listEvents(`subject=${encodeURIComponent(uidOf(binding))}`);
    expect(Object.keys(body).sort()).toEqual(["events", "nextPageToken", "skipped", "totalCount"]);
    expect(body["totalCount"]).toBe("1");
    const [event] = eventsOf(body);
    expect(event).toMatchObject({
      type: "platform.iam.role_binding.created.v1",
      source: server.app.urls.baseUrl,
      subject: uidOf(binding),
      actor: admin,
      group: org,
      // The binding as GetRoleBinding shows it: hydrated with its identity, group and role.
      data: { after: { uid: uidOf(binding), identity: { uid: identity }, group: { uid: org }, role: { uid: "viewer" } } },
    });
    expect(event!["id"]).toMatch(/^[0-9a-f]{28}$/);
    expect(event!["time"]).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it("records the owner binding an organization's creation makes, as a binding created through the API", async () => {
    const org = uidOf(await createGroup(call, "events-owner"));
    const [created, owner, ...rest] = eventsOf(await listEvents(`uidp.inRoot=${org}`));
    expect(rest).toEqual([]);
    expect(created).toMatchObject({ type: "platform.iam.group.created.v1", subject: org });
    const [binding] = (await ok(call("GET", `/iam/v2beta1/roleBindings?group=${org}`)))["roleBindings"] as JsonObject[];
    expect(owner).toMatchObject({
      type: "platform.iam.role_binding.created.v1",
      subject: uidOf(binding!),
      actor: admin,
      group: org,
      data: { after: { uid: uidOf(binding!), identity: { uid: admin }, group: { uid: org }, role: { uid: "owner" } } },
    });
    // The data is the binding as GetRoleBinding shows it.
    expect((owner!["data"] as JsonObject)["after"]).toEqual(await ok(call("GET", `/iam/v2beta1/roleBindings/${uidOf(binding!)}`)));
  });

  it("records the bindings that go with a deleted group or identity as deleted, by whoever deleted it", async () => {
    const { org, identity } = await orgWithIdentity("events-cascade");
    const team = uidOf(await createGroup(call, "team", org));
    const atTeam = await ok(bind(call, team, identity, "viewer"));
    const atOrg = await ok(bind(call, org, identity, "editor"));
    const shown = async (uid: string) => ok(call("GET", `/iam/v2beta1/roleBindings/${uid}`));
    const [teamBinding, orgBinding] = [await shown(uidOf(atTeam)), await shown(uidOf(atOrg))];
    const deletions = async (group: string) =>
      eventsOf(await listEvents(`uidp.inRoot=${group}&typePrefix=platform.iam.`)).filter((e) => String(e["type"]).endsWith(".deleted.v1"));

    await ok(call("DELETE", `/iam/v2beta1/groups/${team}`));
    expect((await deletions(org)).map((e) => [e["type"], e["subject"]])).toEqual([
      ["platform.iam.role_binding.deleted.v1", uidOf(atTeam)],
      ["platform.iam.group.deleted.v1", team],
    ]);
    expect((await deletions(org))[0]).toMatchObject({ actor: admin, group: team, data: { before: teamBinding } });

    // A person's root binding goes with their identity too (a global event).
    const person = await server.app.database.db.transaction((tx) =>
      findOrCreatePersonIdentity(
        tx,
        { issuer: "https://idp.example", subject: "cascade", email: "", emailVerified: false, name: "cascade" },
        new Date(),
      ),
    );
    const root = await ok(call("POST", "/iam/v2beta1/rootRoleBindings", { identityUid: person, roleUid: "viewer" }));
    const rootBinding = await ok(call("GET", `/iam/v2beta1/rootRoleBindings/${uidOf(root)}`));
    await ok(call("DELETE", `/iam/v2beta1/identities/${identity}`));
    await ok(call("DELETE", `/iam/v2beta1/identities/${person}`));
    expect((await deletions(org)).slice(2).map((e) => [e["type"], e["subject"]])).toEqual([
      ["platform.iam.role_binding.deleted.v1", uidOf(atOrg)],
      ["platform.iam.identity.deleted.v1", identity],
    ]);
    expect((await deletions(org))[2]).toMatchObject({ actor: admin, group: org, data: { before: orgBinding } });
    const [rootDeleted] = eventsOf(await listEvents(`subject=${uidOf(root)}&type=platform.iam.root_role_binding.deleted.v1`));
    expect(rootDeleted).toMatchObject({ actor: admin, group: "", data: { before: rootBinding } });
  });

  it("filters by type (exact and prefix), subject, actor and time, scoped by uidp, oldest first, with a cursor", async () => {
    const { org, identity } = await orgWithIdentity("events-filters");
    const child = uidOf(await createGroup(call, "child", org));
    await ok(bind(call, org, identity, "viewer"));
    await ok(call("PATCH", `/iam/v2beta1/groups/${child}?updateMask=description`, { description: "changed" }));
    const all = await listEvents(`uidp.inRoot=${org}`);
    expect(eventsOf(all).map((e) => e["type"])).toEqual([
      "platform.iam.group.created.v1",
      // The organization's creator, made its owner.
      "platform.iam.role_binding.created.v1",
      "platform.iam.identity.created.v1",
      "platform.iam.group.created.v1",
      "platform.iam.role_binding.created.v1",
      "platform.iam.group.updated.v1",
    ]);
    const update = eventsOf(all)[5]!;
    expect(update["data"]).toMatchObject({ before: { description: "" }, after: { description: "changed" } });
    expect(eventsOf(await listEvents(`uidp.inRoot=${org}&type=platform.iam.group.created.v1`))).toHaveLength(2);
    expect(eventsOf(await listEvents(`uidp.inRoot=${org}&typePrefix=platform.iam.group.`))).toHaveLength(3);
    expect(eventsOf(await listEvents(`uidp.childrenOf=${child}`)).map((e) => e["type"])).toEqual([
      "platform.iam.group.created.v1",
      "platform.iam.group.updated.v1",
    ]);
    expect(eventsOf(await listEvents(`uidp.inRoot=${org}&actor=${admin}`))).toHaveLength(6);
    expect(eventsOf(await listEvents(`uidp.inRoot=${org}&actor=nobody`))).toHaveLength(0);
    const since = update["time"] as string;
    expect(eventsOf(await listEvents(`uidp.inRoot=${org}&since=${since}`)).map((e) => e["id"])).toContain(update["id"]);
    expect(eventsOf(await listEvents(`uidp.inRoot=${org}&until=${since}`)).map((e) => e["id"])).not.toContain(update["id"]);
    // Newest first on request, and a cursor through pages of two.
    const desc = eventsOf(await listEvents(`uidp.inRoot=${org}&orderBy=time%20desc`)).map((e) => e["id"]);
    expect(desc).toEqual(
      eventsOf(all)
        .map((e) => e["id"])
        .reverse(),
    );
    const seen: unknown[] = [];
    let token = "";
    do {
      const page = await listEvents(`uidp.inRoot=${org}&pageSize=2${token ? `&pageToken=${token}` : ""}`);
      expect(page["totalCount"]).toBe("6");
      seen.push(...eventsOf(page).map((e) => e["id"]));
      token = page["nextPageToken"] as string;
    } while (token);
    expect(seen).toEqual(eventsOf(all).map((e) => e["id"]));
  });

  it("refuses bad filters with INVALID_ARGUMENT: NUL, oversized, unknown order, a time out of range", async () => {
    expectInvalid(await call("GET", "/events/v2beta1/events?type=a%00b"), "type");
    expectInvalid(await call("GET", `/events/v2beta1/events?subject=${"x".repeat(5000)}`), "subject");
    expectInvalid(await call("GET", "/events/v2beta1/events?orderBy=name"), "order_by");
    expect((await call("GET", "/events/v2beta1/events?since=yesterday")).status).toBe(400);
    expect((await call("GET", "/events/v2beta1/events?pageSize=many")).status).toBe(400);
  });

  it("shows an organization's viewer its own events and none of another organization's", async () => {
    const a = await orgWithIdentity("events-visible-a");
    const b = await orgWithIdentity("events-visible-b");
    await ok(bind(call, a.org, a.identity, "viewer"));
    const viewer = (await server.app.tokens.mint(a.identity, server.app.urls.baseUrl)).token;
    const mine = eventsOf(await listEvents("pageSize=200", viewer));
    expect(mine.length).toBeGreaterThan(0);
    expect(mine.every((e) => e["group"] === a.org || (e["group"] as string).startsWith(`${a.org}/`))).toBe(true);
    expect(mine.some((e) => e["group"] === b.org)).toBe(false);
    expect(eventsOf(await listEvents(`uidp.inRoot=${b.org}`, viewer))).toEqual([]);
    // A global event (an advisory import) is a platform administrator's only.
    expect(mine.some((e) => e["group"] === "")).toBe(false);
  });

  it("records token exchanges whose token its issuer signed, accepted or rejected; not garbage tokens", async () => {
    const provider = await startOidcProvider(["workload-a", "workload-b"]);
    try {
      const org = uidOf(await createGroup(call, "events-exchange"));
      const identity = uidOf(
        await createIdentity(call, org, { name: "ci", claimMatch: { issuer: provider.issuer, subject: "workload-a" } }),
      );
      const exchange = async (token: string) => {
        const query = new URLSearchParams({ aud: server.app.urls.baseUrl, identity });
        return (
          await fetch(`${server.app.urls.authUrl}/sts/exchange?${query}`, { method: "POST", headers: { authorization: `Bearer ${token}` } })
        ).status;
      };
      expect(await exchange(await provider.workloadToken("workload-a", server.app.urls.authUrl))).toBe(200);
      expect(await exchange(await provider.workloadToken("workload-b", server.app.urls.authUrl))).toBe(401);
      // Not signed by the issuer: logged, but a stranger who guesses a uid writes no event.
      expect(await exchange("not-a-jwt")).toBe(401);
      const events = eventsOf(await listEvents(`subject=${encodeURIComponent(identity)}&type=platform.auth.token.exchanged.v1`));
      expect(events.map((e) => [e["actor"], (e["data"] as JsonObject)["outcome"], (e["data"] as JsonObject)["reason"]])).toEqual([
        [identity, "accepted", undefined],
        ["", "rejected", "subject does not match"],
      ]);
      expect(events[0]).toMatchObject({ group: org, data: { audience: server.app.urls.baseUrl } });
    } finally {
      await provider.stop();
    }
  });
});

/**
 * The subscription once its first delivery is recorded: the receiver sees the POST before the
 * dispatcher records the answer, and a Get reads the row before it counts the deliveries.
 */
async function subscriptionOnceDelivered(uid: string): Promise<JsonObject> {
  let status: JsonObject = {};
  for (let i = 0; i < 100 && (status["deliveredCount"] !== "1" || !status["lastDeliveryTime"]); i++) {
    if (i) await new Promise((r) => setTimeout(r, 20));
    status = await ok(call("GET", `/events/v2beta1/subscriptions/${uid}`));
  }
  return status;
}

describe("webhooks", () => {
  it("delivers a new binding to a subscribed receiver within a second, signed as Standard Webhooks specifies", async () => {
    const { org, identity } = await orgWithIdentity("events-webhook");
    const subscription = await subscribe(org, receiver.url, ["platform.iam.role_binding."]);
    const secret = subscription["secret"] as string;
    expect(secret).toMatch(/^whsec_/);
    // The secret is returned once, and never in an event.
    expect((await ok(call("GET", `/events/v2beta1/subscriptions/${uidOf(subscription)}`)))["secret"]).toBeUndefined();
    const start = Date.now();
    const binding = await ok(bind(call, org, identity, "viewer"));
    const mine = (r: { body: string }) => r.body.includes(uidOf(binding));
    await receiver.until((all) => all.some(mine), 1000);
    const got = receiver.received.find(mine)!;
    expect(got.at - start).toBeLessThan(1000);
    expect(got.headers["content-type"]).toBe("application/cloudevents+json");
    const verified = new Webhook(secret).verify(got.body, got.headers as Record<string, string>) as JsonObject;
    expect(verified).toMatchObject({
      specversion: "1.0",
      type: "platform.iam.role_binding.created.v1",
      subject: uidOf(binding),
      actor: admin,
      data: { after: { uid: uidOf(binding) } },
    });
    expect(got.headers["webhook-id"]).toBe(verified["id"]);
    // Only the types subscribed to: the identity's creation went elsewhere.
    expect(receiver.received.some((r) => r.body.includes("platform.iam.identity.created.v1") && r.body.includes(identity))).toBe(false);
    const status = await subscriptionOnceDelivered(uidOf(subscription));
    expect(status).toMatchObject({ deliveredCount: "1", pendingCount: "0", failedCount: "0", lastError: "" });
    expect(status["lastDeliveryTime"]).not.toBeNull();
    // The subscription's own creation is an event, without its secret.
    const [created] = eventsOf(await listEvents(`subject=${encodeURIComponent(uidOf(subscription))}`));
    expect(JSON.stringify(created)).not.toContain(secret);
  });

  it("sends a receiver's deliveries over kept connections, and closes them when the server stops", async () => {
    const own = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true" });
    const hook = await WebhookReceiver.start();
    try {
      const ownCall = restClient(own.url, own.token);
      const org = uidOf(await createGroup(ownCall, "events-keep-alive"));
      await ok(ownCall("POST", `/events/v2beta1/subscriptions/${org}`, { sink: hook.url, types: ["platform.registry.repo.created.v1"] }));
      for (let i = 1; i <= 5; i++) {
        await ok(ownCall("POST", `/registry/v2beta1/repos/${org}`, { name: `kept-${i}` }));
        await hook.until((all) => all.length === i);
      }
      // One connection per delivery before (a TCP and TLS handshake each); a second one at most now.
      expect(hook.connectionsMade).toBeLessThanOrEqual(2);
      expect(hook.openConnections).toBeGreaterThan(0);
      await own.stop();
      await hook.until(() => hook.openConnections === 0, 2000);
    } finally {
      await own.stop();
      await hook.stop();
    }
  });

  it("retries a receiver that answers 500: the fourth try delivers, and the last error is readable meanwhile", async () => {
    const flaky = await WebhookReceiver.start();
    try {
      const { org } = await orgWithIdentity("events-retry");
      const subscription = await subscribe(org, flaky.url, ["platform.registry."]);
      flaky.answer = (_r, n) => (n <= 3 ? 500 : 200);
      const repo = await ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "retried" }));
      await flaky.until((all) => all.length >= 4, 10_000);
      const ids = flaky.received.map((r) => r.headers["webhook-id"]);
      expect(new Set(ids).size).toBe(1);
      expect(flaky.received[3]!.body).toContain(uidOf(repo));
      // Backoff: each retry waits longer than the one before.
      const gaps = flaky.received.slice(1, 4).map((r, i) => r.at - flaky.received[i]!.at);
      expect(gaps[2]!).toBeGreaterThanOrEqual(gaps[0]!);
      const status = await subscriptionOnceDelivered(uidOf(subscription));
      expect(status).toMatchObject({ deliveredCount: "1", pendingCount: "0", lastError: "the sink answered 500" });
    } finally {
      await flaky.stop();
    }
  });

  it("refuses sinks at private and metadata addresses, and malformed ones, as INVALID_ARGUMENT on sink", async () => {
    const { org } = await orgWithIdentity("events-sinks");
    for (const sink of [
      "https://10.0.0.1/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://[::ffff:10.0.0.1]/",
      "ftp://example.com/",
      "not a url",
      "https://user:pw@example.com/",
    ]) {
      expectInvalid(await call("POST", `/events/v2beta1/subscriptions/${org}`, { sink }), "sink");
    }
    expectInvalid(
      await call("POST", `/events/v2beta1/subscriptions/${org}`, { sink: "https://example.com/", types: ["Bad Type"] }),
      "types[0]",
    );
    expectInvalid(await call("POST", `/events/v2beta1/subscriptions/${org}`, { sink: "https://example.com/\u0000" }), "sink");
    const made = await subscribe(org, "https://example.com/hook");
    expectInvalid(await call("PATCH", `/events/v2beta1/subscriptions/${uidOf(made)}`, { sink: "https://169.254.169.254/" }), "sink");
  });

  it("shows a failed delivery's kind as the last error, never the egress guard's text (hosts, addresses)", async () => {
    const { org } = await orgWithIdentity("events-unreachable");
    const made = await subscribe(org, "http://127.0.0.1:1/hook", ["platform.registry."]);
    await ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "nowhere" }));
    let status: JsonObject = {};
    for (let i = 0; i < 200 && !status["lastError"]; i++) {
      if (i) await new Promise((r) => setTimeout(r, 20));
      status = await ok(call("GET", `/events/v2beta1/subscriptions/${uidOf(made)}`));
    }
    expect(status["lastError"]).toBe("the sink could not be reached");
    expect(status["pendingCount"]).toBe("1");
    await ok(call("DELETE", `/events/v2beta1/subscriptions/${uidOf(made)}`));
  });

  it("needs events.list where it sends from, beside subscriptions.create: a subscription is a way to read events", async () => {
    const { org, identity } = await orgWithIdentity("events-ceiling");
    const role = uidOf(
      await ok(
        call("POST", `/iam/v2beta1/roles/${org}`, {
          name: "hooker",
          capabilities: ["subscriptions.create", "subscriptions.update", "subscriptions.list"],
        }),
      ),
    );
    await ok(bind(call, org, identity, role));
    const hooker = restClient(server.url, (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    const refused = await hooker("POST", `/events/v2beta1/subscriptions/${org}`, { sink: "https://example.com/hook" });
    expect(refused.status).toBe(403);
    expect(refused.body["message"]).toContain("events.list");
    const made = await subscribe(org, "https://example.com/hook");
    expect((await hooker("PATCH", `/events/v2beta1/subscriptions/${uidOf(made)}`, { description: "mine now" })).status).toBe(403);
    await ok(
      call("PATCH", `/iam/v2beta1/roles/${role}?updateMask=capabilities`, {
        capabilities: ["subscriptions.create", "subscriptions.update", "subscriptions.list", "events.list"],
      }),
    );
    expect((await hooker("PATCH", `/events/v2beta1/subscriptions/${uidOf(made)}`, { description: "mine now" })).status).toBe(200);
    expect((await hooker("POST", `/events/v2beta1/subscriptions/${org}`, { sink: "https://example.com/hook" })).status).toBe(200);
  });

  it("holds 50 subscriptions per organization, in all its groups, also when creates race: more is RESOURCE_EXHAUSTED with a QuotaFailure", async () => {
    const { org } = await orgWithIdentity("events-quota");
    const team = uidOf(await createGroup(call, "team", org));
    // A type no event has: 50 subscriptions to every type would each be sent every later event here.
    const quiet = { sink: "https://example.com/hook", types: ["platform.test.never."] };
    const create = (group: string, body: JsonObject = quiet) => call("POST", `/events/v2beta1/subscriptions/${group}`, body);
    // 45 at the organization and 10 in a group below, at once: exactly the limit is made, whatever
    // the order in which they run (they race on PostgreSQL; PGlite runs one transaction at a
    // time). Nesting groups does not give more.
    const results = await Promise.all([
      ...Array.from({ length: 45 }, () => create(org)),
      ...Array.from({ length: 10 }, () => create(team)),
    ]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(MAX_SUBSCRIPTIONS_PER_ORGANIZATION);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(55 - MAX_SUBSCRIPTIONS_PER_ORGANIZATION);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.body["code"]).toBe(8);
      expect(restDetail(r, "QuotaFailure")).toEqual({
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        violations: [
          {
            subject: `organization ${org}`,
            description: expect.stringContaining(`at most ${MAX_SUBSCRIPTIONS_PER_ORGANIZATION} subscriptions`),
          },
        ],
      });
    }
    const listed = await ok(call("GET", `/events/v2beta1/subscriptions?uidp.inRoot=${org}&pageSize=200`));
    expect(listed["totalCount"]).toBe(String(MAX_SUBSCRIPTIONS_PER_ORGANIZATION));
    // A bad request is told so first; another organization has a limit of its own; deleting one makes room.
    expectInvalid(await create(team, { sink: "https://10.0.0.1/hook" }), "sink");
    expect((await create(team)).status).toBe(429);
    await ok(create((await orgWithIdentity("events-quota-other")).org));
    await ok(call("DELETE", `/events/v2beta1/subscriptions/${uidOf((listed["subscriptions"] as JsonObject[])[0]!)}`));
    await ok(create(team));
    expect((await create(org)).status).toBe(429);
  });

  it("lets a viewer read subscriptions but not make them (owner only)", async () => {
    const { org, identity } = await orgWithIdentity("events-authz");
    await ok(bind(call, org, identity, "editor"));
    const editor = restClient(server.url, (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    const refused = await editor("POST", `/events/v2beta1/subscriptions/${org}`, { sink: "https://example.com/hook" });
    expect(refused.status).toBe(403);
    const made = await subscribe(org, "https://example.com/hook");
    expect((await editor("GET", `/events/v2beta1/subscriptions/${uidOf(made)}`)).status).toBe(200);
    expect((await editor("DELETE", `/events/v2beta1/subscriptions/${uidOf(made)}`)).status).toBe(403);
    await ok(call("DELETE", `/events/v2beta1/subscriptions/${uidOf(made)}`));
  });
});

describe("WatchEvents", () => {
  it("streams new events over Connect and over grpc-js, and resumes after an id", async () => {
    const { org } = await orgWithIdentity("events-watch");
    const before = eventsOf(await listEvents(`uidp.inRoot=${org}`));
    const client = connectClient(EventsService, server.url, server.token);
    const abort = new AbortController();
    const got: Event[] = [];
    const stream = (async () => {
      for await (const e of client.watchEvents({ uidp: { inRoot: org }, afterId: before[0]!["id"] as string }, { signal: abort.signal })) {
        got.push(e);
        if (got.length === before.length) abort.abort();
      }
    })().catch((e: unknown) => {
      if (!(e instanceof ConnectError && e.code === Code.Canceled)) throw e;
    });
    const grpcClient = grpcJsClient(
      `127.0.0.1:${server.app.port}`,
      "platform.events.v2beta1.EventsService",
      "platform/events/v2beta1/events.proto",
    );
    const md = new grpc.Metadata();
    md.set("authorization", `Bearer ${server.token}`);
    const viaGrpc: JsonObject[] = [];
    const grpcStream = (grpcClient["WatchEvents"] as (req: unknown, md: grpc.Metadata) => grpc.ClientReadableStream<JsonObject>).call(
      grpcClient,
      { uidp: { in_root: org } },
      md,
    );
    const grpcDone = new Promise<void>((resolve, reject) => {
      grpcStream.on("data", (e: JsonObject) => {
        viaGrpc.push(e);
        if (viaGrpc.length === 1) grpcStream.cancel();
      });
      grpcStream.on("error", (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? resolve() : reject(e)));
      grpcStream.on("end", resolve);
    });
    // Both streams are listening once the server counts them.
    for (let i = 0; i < 100 && server.app.eventHub.size < 2; i++) await new Promise((r) => setTimeout(r, 20));
    const repo = await ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "watched" }));
    await Promise.all([stream, grpcDone]);
    grpcClient.close();
    // Replayed after the first event (the owner binding and the identity's creation), then the new repo.
    expect(got.map((e) => e.type)).toEqual([
      "platform.iam.role_binding.created.v1",
      "platform.iam.identity.created.v1",
      "platform.registry.repo.created.v1",
    ]);
    expect(viaGrpc[0]).toMatchObject({ type: "platform.registry.repo.created.v1", subject: uidOf(repo), group: org });
  });

  it("shows a viewer's stream its organization's events and none of another's", async () => {
    const a = await orgWithIdentity("events-watch-a");
    const b = await orgWithIdentity("events-watch-b");
    await ok(bind(call, a.org, a.identity, "viewer"));
    const viewer = (await server.app.tokens.mint(a.identity, server.app.urls.baseUrl)).token;
    const watching = server.app.eventHub.size;
    const first = (async () => {
      for await (const e of connectClient(EventsService, server.url, viewer).watchEvents({})) return e;
      return undefined;
    })();
    for (let i = 0; i < 100 && server.app.eventHub.size <= watching; i++) await new Promise((r) => setTimeout(r, 20));
    // Another organization's change first: the viewer's stream must skip it.
    await ok(call("POST", `/registry/v2beta1/repos/${b.org}`, { name: "not-yours" }));
    const mine = await ok(call("POST", `/registry/v2beta1/repos/${a.org}`, { name: "yours" }));
    const got = await first;
    expect(got).toMatchObject({ subject: uidOf(mine), group: a.org });
  });

  it("refuses a stream to a caller who can see no event, and more than 16 streams per identity", async () => {
    const { org, identity } = await orgWithIdentity("events-watch-limits");
    const nobody = (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token;
    const firstOf = async (token: string, signal?: AbortSignal) => {
      for await (const e of connectClient(EventsService, server.url, token).watchEvents({ uidp: { inRoot: org } }, { signal })) return e;
      return undefined;
    };
    await expect(firstOf(nobody)).rejects.toMatchObject({ code: Code.PermissionDenied });
    await ok(bind(call, org, identity, "viewer"));
    const viewer = (await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token;
    const abort = new AbortController();
    // One client-side signal for the 16 streams: more listeners than Node's default warning level.
    setMaxListeners(32, abort.signal);
    const before = server.app.eventHub.size;
    const open = Array.from({ length: 16 }, () => firstOf(viewer, abort.signal).catch(() => undefined));
    for (let i = 0; i < 200 && server.app.eventHub.size < before + 16; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.app.eventHub.size).toBe(before + 16);
    await expect(firstOf(viewer)).rejects.toMatchObject({ code: Code.ResourceExhausted });
    abort.abort();
    await Promise.all(open);
  });

  /** Opens a stream of every event `token` may see; `got` fills as events arrive, `ended` settles when it ends. */
  async function openWatch(token: string) {
    const got: Event[] = [];
    const watching = server.app.eventHub.size;
    const ended = (async () => {
      for await (const e of connectClient(EventsService, server.url, token).watchEvents({})) got.push(e);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    for (let i = 0; i < 100 && server.app.eventHub.size <= watching; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.app.eventHub.size).toBeGreaterThan(watching);
    return { got, ended };
  }

  const until = async (done: () => boolean) => {
    for (let i = 0; i < 250 && !done(); i++) await new Promise((r) => setTimeout(r, 20));
  };

  it("narrows a stream when its caller loses a binding, and ends it when the last one goes", async () => {
    const { org, identity } = await orgWithIdentity("events-watch-revoke");
    const team = uidOf(await createGroup(call, "team", org));
    const atOrg = await ok(bind(call, org, identity, "viewer"));
    const atTeam = await ok(bind(call, team, identity, "viewer"));
    const { got, ended } = await openWatch((await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    const seen = (uid: string) => got.some((e) => e.subject === uid);

    await ok(call("DELETE", `/iam/v2beta1/roleBindings/${uidOf(atOrg)}`));
    const hidden = uidOf(await ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "hidden" })));
    const shown = uidOf(await ok(call("POST", `/registry/v2beta1/repos/${team}`, { name: "shown" })));
    await until(() => seen(shown));
    expect(seen(shown)).toBe(true);

    await ok(call("DELETE", `/iam/v2beta1/roleBindings/${uidOf(atTeam)}`));
    const after = uidOf(await ok(call("POST", `/registry/v2beta1/repos/${team}`, { name: "after" })));
    const err = await ended;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).toMatchObject({ code: Code.PermissionDenied });
    expect((err as ConnectError).rawMessage).toMatch(/holds events\.list nowhere/);
    expect(seen(hidden)).toBe(false);
    expect(seen(after)).toBe(false);
  });

  it("ends a stream with UNAUTHENTICATED when its caller's identity is deleted", async () => {
    const { org, identity } = await orgWithIdentity("events-watch-gone");
    await ok(bind(call, org, identity, "viewer"));
    const { got, ended } = await openWatch((await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    await ok(call("DELETE", `/iam/v2beta1/identities/${identity}`));
    const after = uidOf(await ok(call("POST", `/registry/v2beta1/repos/${org}`, { name: "after" })));
    const err = await ended;
    expect(err).toMatchObject({ code: Code.Unauthenticated });
    expect((err as ConnectError).rawMessage).toMatch(/no longer exists/);
    expect(got.some((e) => e.subject === after)).toBe(false);
  });

  it("ends an idle stream with UNAUTHENTICATED when its token expires", async () => {
    const { org, identity } = await orgWithIdentity("events-watch-expiry");
    await ok(bind(call, org, identity, "viewer"));
    // Two seconds from now at most (JWT times are whole seconds); no event reaches the stream meanwhile.
    const { token, expiry } = await server.app.tokens.mint(identity, server.app.urls.baseUrl, 2);
    const watching = server.app.eventHub.size;
    const { got, ended } = await openWatch(token);
    const err = await ended;
    expect(err).toMatchObject({ code: Code.Unauthenticated });
    expect((err as ConnectError).rawMessage).toMatch(/expired/);
    expect(server.clock.now().getTime()).toBeGreaterThanOrEqual(expiry.getTime());
    expect(got).toEqual([]);
    await until(() => server.app.eventHub.size === watching);
    expect(server.app.eventHub.size).toBe(watching);
  });

  it("refuses more than 64 streams reading one organization's events, whoever holds them; a stream scoped to another counts there", async () => {
    const { org } = await orgWithIdentity("events-watch-org-limit");
    const other = (await orgWithIdentity("events-watch-org-other")).org;
    const tokens: string[] = [];
    for (let i = 0; i < 4; i++) {
      const identity = uidOf(
        await createIdentity(call, org, {
          name: `watcher-${i}`,
          claimMatch: { issuer: "https://issuer.example", subject: `watcher-${i}` },
        }),
      );
      await ok(bind(call, org, identity, "viewer"));
      tokens.push((await server.app.tokens.mint(identity, server.app.urls.baseUrl)).token);
    }
    // A person, as sign-in through the organization's identity provider makes one: root-level,
    // bound in the organization (here, and in another organization too).
    const person = await server.app.database.db.transaction((tx) =>
      findOrCreatePersonIdentity(
        tx,
        { issuer: "https://idp.example", subject: "streamer", email: "", emailVerified: false, name: "streamer" },
        new Date(),
      ),
    );
    await ok(bind(call, org, person, "viewer"));
    await ok(bind(call, other, person, "viewer"));
    const personToken = (await server.app.tokens.mint(person, server.app.urls.baseUrl)).token;
    const abort = new AbortController();
    setMaxListeners(2 * MAX_STREAMS_PER_ORGANIZATION, abort.signal);
    const firstOf = async (token: string, signal: AbortSignal, scope = org) => {
      for await (const e of connectClient(EventsService, server.url, token).watchEvents({ uidp: { inRoot: scope } }, { signal })) return e;
      return undefined;
    };
    const opened = async (n: number) => {
      for (let i = 0; i < 250 && server.app.eventHub.size < n; i++) await new Promise((r) => setTimeout(r, 20));
      expect(server.app.eventHub.size).toBe(n);
    };
    const before = server.app.eventHub.size;
    // Four identities with 16 streams each: the organization's 64.
    const open = Array.from({ length: MAX_STREAMS_PER_ORGANIZATION }, (_, i) =>
      firstOf(tokens[Math.floor(i / 16)]!, abort.signal).catch(() => undefined),
    );
    await opened(before + MAX_STREAMS_PER_ORGANIZATION);
    // The person, who has no stream open yet, is refused a stream of the organization, unscoped too.
    for (const scope of [org, ""]) {
      const refused = await firstOf(personToken, AbortSignal.timeout(5_000), scope).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toMatchObject({ code: Code.ResourceExhausted });
      expect((refused as ConnectError).rawMessage).toContain(`organization ${org}'s events`);
    }
    // Scoped to the other organization, or opened by a platform administrator, a stream is admitted.
    const admitted = [
      firstOf(personToken, abort.signal, other).catch(() => undefined),
      firstOf(server.token, abort.signal).catch(() => undefined),
    ];
    await opened(before + MAX_STREAMS_PER_ORGANIZATION + 2);
    abort.abort();
    await Promise.all([...open, ...admitted]);
  });

  it("refuses a resume point that names no event, and bad filters", async () => {
    const client = connectClient(EventsService, server.url, server.token);
    const first = async (req: Parameters<typeof client.watchEvents>[0]) => {
      for await (const e of client.watchEvents(req)) return e;
      return undefined;
    };
    await expect(first({ afterId: "0000000000000000000000000000" })).rejects.toMatchObject({ code: Code.InvalidArgument });
    await expect(first({ type: "a\u0000b" })).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});

describe("WatchEvents on a server that holds 2 streams (PLATFORM_MAX_EVENT_STREAMS=2)", () => {
  it("refuses a third stream, whoever opens it, with RESOURCE_EXHAUSTED and a QuotaFailure on the server; a stream that ends frees its place", async () => {
    const small = await startTestServer({ PLATFORM_MAX_EVENT_STREAMS: "2" });
    try {
      const client = connectClient(EventsService, small.url, small.token);
      const abort = new AbortController();
      const firstOf = async (signal?: AbortSignal) => {
        for await (const e of client.watchEvents({}, { signal })) return e;
        return undefined;
      };
      const opened = async (n: number) => {
        for (let i = 0; i < 250 && small.app.eventHub.size !== n; i++) await new Promise((r) => setTimeout(r, 20));
        expect(small.app.eventHub.size).toBe(n);
      };
      const open = [firstOf(abort.signal).catch(() => undefined), firstOf(abort.signal).catch(() => undefined)];
      await opened(2);
      // A platform administrator counts in no organization, and has 14 of its own left: only the server's cap refuses.
      const refused = await firstOf().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(ConnectError);
      expect(refused).toMatchObject({ code: Code.ResourceExhausted });
      expect((refused as ConnectError).findDetails(QuotaFailureSchema)[0]?.violations[0]).toMatchObject({ subject: "server" });
      abort.abort();
      await Promise.all(open);
      await opened(0);
      const again = new AbortController();
      const reopened = firstOf(again.signal).catch(() => undefined);
      await opened(1);
      again.abort();
      await reopened;
    } finally {
      await small.stop();
    }
  });
});
