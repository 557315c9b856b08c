import { randomBytes } from "node:crypto";
import { eq, inArray, sql, TransactionRollbackError } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { Grants } from "../authz/grants.js";
import { SecretBox } from "../crypto/index.js";
import { newRootUid, queryRows, schema, type DatabaseHandle } from "../db/index.js";
import type { EgressFetch, EgressRequestInit } from "../egress/index.js";
import { subscriptionSecretContext, WebhookDispatcher } from "./dispatcher.js";
import { CREATOR_DELETED, creatorMayNotList } from "./stop-subscriptions.js";

// The dispatcher's scheduling (docs/design.md, "Webhooks"): deliveries run side by side, a slow
// sink holds only its own share of the slots, a freed slot is filled at once, and stopping
// releases what it cut off.

const NOW = new Date("2030-06-01T00:00:00.000Z");
const secrets = new SecretBox(randomBytes(32));
let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

/** What each identity holds in the tests' grants (none: nothing; an unknown identity does not exist). */
const held = new Map<string, Grants>();
const grantsOf = (uid: string) => Promise.resolve(held.get(uid) ?? new Grants([], { exists: false, rootLevel: false, issuer: "" }));

/**
 * A subscription to `sink` in a new group (or `inGroup`), and one pending delivery per subject (in
 * order, one event each; a subject may come more than once), due `dueMs` ago (all due now by
 * default). Made by `creator` (none by default: made before creators were recorded).
 */
async function subscriptionWithDeliveries(
  sink: string,
  subjects: string[],
  dueMs: (i: number) => number = () => 0,
  { inGroup, creator }: { inGroup?: string; creator?: string } = {},
): Promise<string> {
  const group = inGroup ?? newRootUid();
  const uid = `${group}/${randomBytes(8).toString("hex")}`;
  if (!inGroup) await handle.db.insert(schema.groups).values({ uid: group, parentUid: null, name: "g", createTime: NOW, updateTime: NOW });
  const secret = secrets.seal(`whsec_${randomBytes(32).toString("base64")}`, subscriptionSecretContext(uid));
  await handle.db
    .insert(schema.subscriptions)
    .values({ uid, parentUid: group, sink, secret, creatorUid: creator ?? null, createTime: NOW, updateTime: NOW });
  for (const [i, subject] of subjects.entries()) {
    const eventUid = `${uid}:${i}:${subject}`;
    const [event] = await handle.db
      .insert(schema.events)
      .values({
        uid: eventUid,
        type: "platform.registry.repo.created.v1",
        source: "https://test",
        subject,
        parentUid: group,
        time: NOW,
        data: {},
      })
      .returning({ seq: schema.events.seq });
    await handle.db.insert(schema.eventDeliveries).values({
      subscriptionUid: uid,
      eventUid,
      eventSeq: event!.seq,
      subject,
      nextAttemptTime: new Date(NOW.getTime() - dueMs(i)),
      deadline: new Date(NOW.getTime() + 86_400_000),
    });
  }
  return uid;
}

/** A fetch whose answers the test gives: every call waits in `calls` until answered, or until its signal aborts. */
function controlledFetch() {
  const calls: { url: string; answer: (status: number) => void; aborted: boolean }[] = [];
  const fetch: EgressFetch = (url, init: EgressRequestInit = {}) =>
    new Promise<Response>((resolve, reject) => {
      const call = { url: String(url), answer: (status: number) => resolve(new Response(null, { status })), aborted: false };
      calls.push(call);
      init.signal?.addEventListener("abort", () => {
        call.aborted = true;
        reject(init.signal!.reason);
      });
    });
  return { fetch, calls };
}

function dispatcherWith(fetch: EgressFetch, caps: { maxInFlight?: number; maxInFlightPerOrganization?: number } = {}) {
  return new WebhookDispatcher({
    db: handle.db,
    fetch,
    secrets,
    grantsOf,
    clock: () => NOW,
    backoffMs: 1000,
    // Only events (notify) and freed slots can make it look: no poll during a test.
    pollMs: 600_000,
    maxInFlight: 16,
    maxInFlightPerSubscription: 4,
    maxInFlightPerOrganization: 8,
    ...caps,
    onError: (e) => {
      throw e;
    },
    onDeliveryError: () => {},
  });
}

/**
 * A dispatcher whose claims (one statement each) go through `claim`: given the claim's number
 * (from 1), it answers a failure to make that claim fail, or undefined to run it.
 */
function dispatcherWhoseClaims(claim: (n: number) => Promise<never> | undefined, onError: (e: unknown) => void = () => {}) {
  let claims = 0;
  const db = new Proxy(handle.db, {
    get(target, key, receiver) {
      if (key === "execute") {
        const failure = claim(++claims);
        if (failure) return () => failure;
      }
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  const dispatcher = new WebhookDispatcher({
    db,
    fetch: controlledFetch().fetch,
    secrets,
    grantsOf,
    clock: () => NOW,
    backoffMs: 1000,
    pollMs: 600_000,
    onError,
    onDeliveryError: () => {},
  });
  return { dispatcher, claims: () => claims };
}

async function until(predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !predicate(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(predicate()).toBe(true);
}

async function untilAsync(predicate: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await predicate()); i++) await new Promise((r) => setTimeout(r, 5));
  expect(await predicate()).toBe(true);
}

/** A new organization (a root group). */
async function newOrganization(): Promise<string> {
  const group = newRootUid();
  await handle.db.insert(schema.groups).values({ uid: group, parentUid: null, name: "g", createTime: NOW, updateTime: NOW });
  return group;
}

const subjects = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

const deliveriesOf = (subscription: string) =>
  queryRows<{ subject: string; state: string; attempts: number; lease_until: unknown; last_error: string }>(
    handle.db,
    sql`select subject, state, attempts, lease_until, last_error from event_deliveries where subscription_uid = ${subscription} order by event_seq`,
  );

describe("WebhookDispatcher", () => {
  it("sends another subscription's delivery while a sink hangs with 70 due, holding at most 4 slots for it; a freed slot is filled at once", async () => {
    // More due than a claim ranks (64), and longer: the first claim sees only the slow ones.
    const slow = await subscriptionWithDeliveries(
      "https://slow.example/hook",
      Array.from({ length: 70 }, (_, i) => `s${i}`),
      (i) => 1000 - i,
    );
    const fast = await subscriptionWithDeliveries("https://fast.example/hook", ["f0"]);
    const { fetch, calls } = controlledFetch();
    const dispatcher = dispatcherWith(fetch);
    dispatcher.start();
    try {
      await until(() => calls.some((c) => c.url.startsWith("https://fast.")));
      calls.find((c) => c.url.startsWith("https://fast."))!.answer(204);
      const slowCalls = () => calls.filter((c) => c.url.startsWith("https://slow."));
      expect(slowCalls()).toHaveLength(4);
      // One slow answer frees a slot: the next slow delivery goes out without waiting for a poll.
      slowCalls()[0]!.answer(200);
      await until(() => slowCalls().length === 5);
      await new Promise((r) => setTimeout(r, 50));
      expect(slowCalls()).toHaveLength(5);
      expect((await deliveriesOf(fast)).map((d) => d.state)).toEqual(["delivered"]);
      expect((await deliveriesOf(slow)).filter((d) => d.state === "delivered")).toHaveLength(1);
    } finally {
      await dispatcher.stop(0);
      await handle.db.delete(schema.subscriptions).where(inArray(schema.subscriptions.uid, [slow, fast]));
    }
  });

  it("holds at most an organization's share of the slots for its many hanging sinks: another organization's delivery goes out", async () => {
    await handle.db.delete(schema.subscriptions);
    // Two subscriptions of one organization, each with more due than its own share, all due before the other's.
    const tenant = await newOrganization();
    for (const name of ["slow-a", "slow-b"]) {
      await subscriptionWithDeliveries(`https://${name}.example/hook`, subjects(name, 10), (i) => 1000 - i, { inGroup: tenant });
    }
    const other = await subscriptionWithDeliveries("https://other.example/hook", ["o0"]);
    const { fetch, calls } = controlledFetch();
    // 8 slots: the two subscriptions' shares (4 each) would take them all; the organization's (4) leaves the rest.
    const dispatcher = dispatcherWith(fetch, { maxInFlight: 8, maxInFlightPerOrganization: 4 });
    dispatcher.start();
    try {
      await until(() => calls.some((c) => c.url.startsWith("https://other.")));
      await new Promise((r) => setTimeout(r, 50));
      expect(calls.filter((c) => c.url.includes("://slow-"))).toHaveLength(4);
      calls.find((c) => c.url.startsWith("https://other."))!.answer(204);
      await untilAsync(async () => (await deliveriesOf(other))[0]!.state === "delivered");
    } finally {
      await dispatcher.stop(0);
      await handle.db.delete(schema.subscriptions);
    }
  });

  it("takes turns across organizations within a claim: of two slots, a long backlog gets one and a newer organization's delivery the other", async () => {
    await handle.db.delete(schema.subscriptions);
    const backlog = await subscriptionWithDeliveries("https://backlog.example/hook", subjects("b", 4), (i) => 1000 - i);
    const newer = await subscriptionWithDeliveries("https://newer.example/hook", ["n"]);
    try {
      const claimed = await dispatcherWith(controlledFetch().fetch).claim(2);
      expect(claimed.map((c) => c.subscription_uid).sort()).toEqual([backlog, newer].sort());
    } finally {
      await handle.db.delete(schema.subscriptions);
    }
  });

  it("sends nothing for a creator who may no longer list events there, or was deleted: stops the subscription saying why, and fails its pending deliveries", async () => {
    await handle.db.delete(schema.subscriptions);
    const group = await newOrganization();
    held.set("carol", new Grants([{ groupUid: group, capabilities: new Set(["events.list"]) }]));
    held.set("dave", new Grants([{ groupUid: group, capabilities: new Set(["subscriptions.list", "subscriptions.update"]) }]));
    const kept = await subscriptionWithDeliveries("https://kept.example/hook", ["k"], undefined, { inGroup: group, creator: "carol" });
    const refused = await subscriptionWithDeliveries("https://refused.example/hook", ["r0", "r1"], undefined, {
      inGroup: group,
      creator: "dave",
    });
    const gone = await subscriptionWithDeliveries("https://gone.example/hook", ["g"], undefined, {
      inGroup: group,
      creator: "deleted-identity",
    });
    const { fetch, calls } = controlledFetch();
    const dispatcher = dispatcherWith(fetch);
    dispatcher.start();
    try {
      await until(() => calls.length === 1);
      calls[0]!.answer(204);
      const failed = async (uid: string) => (await deliveriesOf(uid)).every((d) => d.state === "failed");
      await untilAsync(async () => (await failed(refused)) && (await failed(gone)) && (await deliveriesOf(kept))[0]!.state === "delivered");
      expect(calls.map((c) => c.url)).toEqual(["https://kept.example/hook"]);
      const rows = await handle.db
        .select()
        .from(schema.subscriptions)
        .where(inArray(schema.subscriptions.uid, [kept, refused, gone]));
      const byUid = new Map(rows.map((r) => [r.uid, r]));
      expect(byUid.get(kept)).toMatchObject({ state: "active", lastError: "" });
      expect(byUid.get(refused)).toMatchObject({ state: "stopped", lastError: creatorMayNotList("dave", group), lastErrorTime: NOW });
      expect(byUid.get(gone)).toMatchObject({ state: "stopped", lastError: CREATOR_DELETED });
      expect((await deliveriesOf(refused)).map((d) => d.last_error)).toEqual([
        creatorMayNotList("dave", group),
        creatorMayNotList("dave", group),
      ]);
    } finally {
      await dispatcher.stop(0);
      await handle.db.delete(schema.subscriptions);
    }
  });

  it("stop() lets a delivery in flight finish within the grace, and releases one it cuts off unrecorded, due at once", async () => {
    const finishing = await subscriptionWithDeliveries("https://finishing.example/hook", ["a"]);
    const hanging = await subscriptionWithDeliveries("https://hanging.example/hook", ["b"]);
    const { fetch, calls } = controlledFetch();
    const dispatcher = dispatcherWith(fetch);
    dispatcher.start();
    await until(() => calls.length === 2);
    let stopped = false;
    const stopping = dispatcher.stop(100).then(() => (stopped = true));
    calls.find((c) => c.url.startsWith("https://finishing."))!.answer(200);
    await stopping;
    expect(stopped).toBe(true);
    expect(calls.find((c) => c.url.startsWith("https://hanging."))!.aborted).toBe(true);
    expect(await deliveriesOf(finishing)).toMatchObject([{ state: "delivered", attempts: 1 }]);
    // Released, not failed: no error recorded, no backoff, claimable by the next replica now.
    expect(await deliveriesOf(hanging)).toEqual([{ subject: "b", state: "pending", attempts: 1, lease_until: null, last_error: "" }]);
    const [sub] = await handle.db.select().from(schema.subscriptions).where(eq(schema.subscriptions.uid, hanging));
    expect(sub!.lastError).toBe("");
    const next = dispatcherWith(controlledFetch().fetch);
    expect((await next.claim(16)).map((c) => c.subscription_uid)).toEqual([hanging]);
  });

  it("claims a subject's delivery only once no earlier one of it is pending: not while it waits for a retry, and once it was delivered or failed", async () => {
    // a#0 waits for its retry (due in a minute); a#1 and b#2 are due.
    const uid = await subscriptionWithDeliveries("https://order.example/hook", ["a", "a", "b"], (i) => (i === 0 ? -60_000 : 0));
    const dispatcher = dispatcherWith(controlledFetch().fetch);
    const claimed = async () =>
      (await dispatcher.claim(16)).filter((c) => c.subscription_uid === uid).map((c) => c.uid.replace(`${uid}:`, ""));
    try {
      expect(await claimed()).toEqual(["2:b"]);
      for (const settled of ["failed", "delivered"]) {
        // Claims end with the test's dispatcher (no lease runs out): clear them so that what is due can be claimed again.
        await handle.db.execute(
          sql`update event_deliveries set state = 'pending', lease_until = null where subscription_uid = ${uid} and event_uid <> ${`${uid}:0:a`}`,
        );
        await handle.db.execute(sql`update event_deliveries set state = ${settled} where event_uid = ${`${uid}:0:a`}`);
        expect((await claimed()).sort(), settled).toEqual(["1:a", "2:b"]);
      }
    } finally {
      await handle.db.delete(schema.subscriptions).where(eq(schema.subscriptions.uid, uid));
    }
  });

  it("checks each candidate's order (an earlier pending event about its subject) by index lookup, not by reading its subscription's backlog", async () => {
    // A table never analyzed, as a new store's is (and PGlite's always is: it has no autovacuum).
    // Written as NOT EXISTS, the check became an anti-join that read every pending row (all 200
    // here) per claim on PGlite, and per candidate on PostgreSQL.
    const backlog = await subscriptionWithDeliveries(
      "https://backlog.example/hook",
      Array.from({ length: 200 }, (_, i) => `s${i}`),
    );
    const statement = dispatcherWith(controlledFetch().fetch).claimStatement(16);
    let plan: unknown;
    // EXPLAIN ANALYZE runs the claim: roll it back.
    await handle.db
      .transaction(async (tx) => {
        plan = (await queryRows<{ "QUERY PLAN": unknown }>(tx, sql`EXPLAIN (ANALYZE, FORMAT JSON) ${statement}`))[0]!["QUERY PLAN"];
        tx.rollback();
      })
      .catch((e: unknown) => {
        if (!(e instanceof TransactionRollbackError)) throw e;
      });
    await handle.db.delete(schema.subscriptions).where(eq(schema.subscriptions.uid, backlog));
    const checks = planNodes(plan).filter((n) => /^p(_\d+)?$/.test(String(n["Alias"])));
    // Both places the check is made (ranking the candidates, and again where they are locked):
    // a lookup by subscription, state and subject, which reads no row but the ones it returns.
    expect(checks).toHaveLength(2);
    for (const check of checks) {
      expect(check["Actual Loops"]).toBeGreaterThan(0);
      expect(String(check["Index Cond"])).toMatch(/subscription_uid = .*state = 'pending'.*subject = /);
      expect(check["Rows Removed by Filter"] ?? 0).toBe(0);
    }
  });

  it("does not pause after a round that failed while resume() was told the database is back", async () => {
    let failFirst!: () => void;
    // The first claim is under way when the LISTEN comes back, and then fails.
    const away = () => new Promise<void>((resolve) => (failFirst = resolve)).then(() => Promise.reject(new Error("database away")));
    const { dispatcher, claims } = dispatcherWhoseClaims((n) => (n === 1 ? away() : undefined));
    dispatcher.start();
    await until(() => claims() === 1);
    dispatcher.resume();
    failFirst();
    await until(() => claims() === 2);
    await dispatcher.stop();
  });

  it("pauses after a failed round, ignoring notifications, and looks again at once when resume() says the database is back", async () => {
    let failing = true;
    const errors: unknown[] = [];
    const { dispatcher, claims } = dispatcherWhoseClaims(
      () => (failing ? Promise.reject(new Error("database away")) : undefined),
      (e) => errors.push(e),
    );
    dispatcher.start();
    await until(() => claims() === 1);
    // Notifications during the pause (600 s doubled) make it ask nothing.
    for (let i = 0; i < 10; i++) dispatcher.notify();
    await new Promise((r) => setTimeout(r, 30));
    expect(claims()).toBe(1);
    expect(errors).toHaveLength(1);
    failing = false;
    dispatcher.resume();
    await until(() => claims() === 2);
    await dispatcher.stop();
    expect(errors).toHaveLength(1);
  });
});

/** Every node of an EXPLAIN (FORMAT JSON) answer. */
function planNodes(explained: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const walk = (node: Record<string, unknown>) => {
    out.push(node);
    for (const child of (node["Plans"] as Record<string, unknown>[] | undefined) ?? []) walk(child);
  };
  const doc = (typeof explained === "string" ? JSON.parse(explained) : explained) as { Plan: Record<string, unknown> }[];
  for (const d of doc) walk(d.Plan);
  return out;
}
