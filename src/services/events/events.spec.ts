import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { and, asc, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { EventsService, WatchEventsRequestSchema, type Event } from "../../../gen/platform/events/v2beta1/events_pb.js";
import { UIDPFilterSchema } from "../../../gen/platform/common/v1/uidp_pb.js";
import { QuotaFailureSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { testEventRecorder } from "../../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../../test/support/fresh-store.js";
import { principalKey } from "../../caller/index.js";
import { SecretBox } from "../../crypto/index.js";
import { schema, type Database, type DatabaseHandle } from "../../db/index.js";
import { Egress } from "../../egress/index.js";
import { EventHub } from "../../events/index.js";
import {
  INLINE_ROOTS,
  ListEngine,
  scopeMatcher,
  visibilityCondition,
  visibilityMatcher,
  type ListVisibility,
  type UidpFilter,
} from "../../list/index.js";
import { scopeConditions } from "../../list/scope.js";
import { ResourceCatalog } from "../resource-catalog.js";
import type { ServiceContext } from "../context.js";
import { eventFilters, eventMatcher, eventsService, eventsSource } from "./events.js";
import { DEFAULT_EVENT_STREAM_LIMITS } from "./stream-limits.js";

// WatchEvents against the service itself (docs/design.md, "Watching"): what each stream costs.

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));

/** Statements run through `db` (select builders and raw executes), while `counting` is on. */
const queries = { counting: false, count: 0 };
function counted(db: Database): Database {
  return new Proxy(db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function" || !["select", "execute"].includes(String(prop))) return value;
      return (...args: unknown[]) => {
        if (queries.counting) queries.count++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/** What each test identity may see: the groups given, as the grants cache would say. */
const visibilityOf = new Map<string, ListVisibility>();
let ctx: ServiceContext;
let hub: EventHub;

beforeAll(async () => {
  const secrets = new SecretBox(Buffer.alloc(32, 7));
  const clock = () => new Date();
  const db = counted(handle.db);
  hub = new EventHub({
    db,
    pollMs: 60_000,
    onError: (e) => {
      throw e;
    },
  });
  ctx = {
    db,
    list: await ListEngine.create(handle.db, secrets, clock),
    clock,
    secrets,
    events: testEventRecorder(clock),
    eventHub: hub,
    egress: new Egress({ allowInsecure: false }),
    access: {
      visibilityNow: async (principal) => {
        const v = visibilityOf.get(principal.identityUid);
        if (!v) throw new Error(`no visibility for ${principal.identityUid}`);
        return v;
      },
    },
    eventStreams: DEFAULT_EVENT_STREAM_LIMITS,
    resources: new ResourceCatalog(),
  };
});

let seq = 1000;
/** An event row in `group`, as if its transaction committed now; returns its uid. */
async function commit(group: string | null, type = "platform.test.thing.created.v1", data: Record<string, unknown> = {}): Promise<string> {
  seq++;
  const uid = `e${String(seq).padStart(8, "0")}`;
  await handle.db.execute(sql`
    insert into events (uid, seq, type, source, subject, actor, parent_uid, time, data)
    values (${uid}, ${seq}, ${type}, 'https://test', ${`s${seq}`}, '', ${group}, now(), ${JSON.stringify(data)}::jsonb)`);
  return uid;
}

/** The service as the server builds it once (its stream counts are its own). */
let service: ServiceImpl<typeof EventsService> | undefined;

/** A WatchEvents call's context for `identity`, ended by `signal`. */
function watchContext(identity: string, signal: AbortSignal) {
  return createHandlerContext({
    service: EventsService,
    method: EventsService.method.watchEvents,
    protocolName: "connect",
    requestMethod: "POST",
    url: "http://test/platform.events.v2beta1.EventsService/WatchEvents",
    requestSignal: signal,
    contextValues: createContextValues().set(principalKey, {
      identityUid: identity,
      audience: "test",
      expiry: new Date(Date.now() + 3_600_000),
    }),
  });
}

/** A WatchEvents stream of `identity` collecting into `got`; `stop` ends it and settles when it has. */
function watch(
  identity: string,
  init: MessageInitShape<typeof WatchEventsRequestSchema> = {},
  on = (service ??=
    eventsService.build(ctx)),
) {
  const abort = new AbortController();
  const context = watchContext(identity, abort.signal);
  const got: Event[] = [];
  const ended = (async () => {
    for await (const e of on.watchEvents!(create(WatchEventsRequestSchema, init), context)) got.push(e as Event);
  })().then(
    () => undefined,
    (e: unknown) => e,
  );
  return {
    got,
    ended,
    stop: async () => {
      abort.abort();
      return ended;
    },
  };
}

const until = async (done: () => boolean) => {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((r) => setTimeout(r, 10));
};

describe("WatchEvents", () => {
  it("costs one events query per batch for all of a replica's watchers, not one per watcher; a watcher that sees none of it costs none", async () => {
    visibilityOf.set("reader-a", { all: false, roots: ["orga"] });
    visibilityOf.set("reader-b", { all: false, roots: ["orgb"] });
    const before = hub.size;
    // Watchers who see the event, one filtered to another type, and watchers of another organization.
    const seeing = Array.from({ length: 8 }, () => watch("reader-a"));
    const otherType = Array.from({ length: 4 }, () => watch("reader-a", { type: "platform.test.other.v1" }));
    const elsewhere = Array.from({ length: 8 }, () => watch("reader-b"));
    const all = [...seeing, ...otherType, ...elsewhere];
    await until(() => hub.size === before + all.length);
    expect(hub.size).toBe(before + all.length);
    // Their start (the latest seq, each) is done once the hub counts them; let it settle.
    await new Promise((r) => setTimeout(r, 50));

    queries.count = 0;
    queries.counting = true;
    const uid = await commit("orga/team");
    hub.wake();
    await until(() => seeing.every((w) => w.got.length === 1));
    await new Promise((r) => setTimeout(r, 50));
    queries.counting = false;

    expect(seeing.map((w) => w.got.map((e) => e.id))).toEqual(seeing.map(() => [uid]));
    expect([...otherType, ...elsewhere].every((w) => w.got.length === 0)).toBe(true);
    // The hub's one look, for all 20.
    expect(queries.count).toBe(1);
    await Promise.all(all.map((w) => w.stop()));
  });

  it("resumes only after an event the caller may see: another organization's id names no event", async () => {
    visibilityOf.set("reader-a", { all: false, roots: ["orga"] });
    visibilityOf.set("reader-b", { all: false, roots: ["orgb"] });
    const theirs = await commit("orga");
    const mine = await commit("orgb");
    const later = await commit("orgb");
    const refused = watch("reader-b", { afterId: theirs });
    const err = await refused.ended;
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).toMatchObject({ code: Code.InvalidArgument });
    expect((err as ConnectError).rawMessage).toMatch(/names no event/);
    const resumed = watch("reader-b", { afterId: mine });
    await until(() => resumed.got.length === 1);
    expect(resumed.got.map((e) => e.id)).toEqual([later]);
    await resumed.stop();
  });

  it("holds the server's, each organization's and each identity's streams to the caps configured: past one, RESOURCE_EXHAUSTED with a QuotaFailure naming it", async () => {
    const capped = eventsService.build({ ...ctx, eventStreams: { perServer: 4, perOrganization: 3, perIdentity: 2 } });
    for (const [who, org] of [
      ["cap-1", "orgc1"],
      ["cap-2", "orgc1"],
      ["cap-3", "orgc2"],
      ["cap-4", "orgc3"],
    ] as const) {
      visibilityOf.set(who, { all: false, roots: [org] });
    }
    const quota = (err: unknown) => {
      expect(err).toBeInstanceOf(ConnectError);
      const e = err as ConnectError;
      expect(e.code).toBe(Code.ResourceExhausted);
      return e.findDetails(QuotaFailureSchema)[0]?.violations[0]?.subject;
    };
    const before = hub.size;
    const open = [watch("cap-1", {}, capped), watch("cap-1", {}, capped)];
    await until(() => hub.size === before + 2);
    // A third of one identity's.
    expect(quota(await watch("cap-1", {}, capped).ended)).toBe("identity:cap-1");
    open.push(watch("cap-2", {}, capped));
    await until(() => hub.size === before + 3);
    // A fourth reading organization orgc1, by an identity with none open yet.
    visibilityOf.set("cap-5", { all: false, roots: ["orgc1"] });
    expect(quota(await watch("cap-5", {}, capped).ended)).toBe("organization:orgc1");
    open.push(watch("cap-3", {}, capped));
    await until(() => hub.size === before + 4);
    // A fifth on the server, whoever opens it.
    expect(quota(await watch("cap-4", {}, capped).ended)).toBe("server");
    // A stream that ends gives its place back.
    await open.pop()!.stop();
    const again = watch("cap-4", {}, capped);
    await until(() => hub.size === before + 4);
    expect(hub.size).toBe(before + 4);
    await Promise.all([...open, again].map((w) => w.stop()));
  });

  /**
   * A stream of `identity` on a hub of its own (whose rows waiting are this stream's only) that
   * takes one event and then stops reading, as a client that no longer reads would make it.
   */
  async function stalledStream(identity: string, group: string, maxBufferedBytes?: number) {
    const own = new EventHub({
      db: handle.db,
      pollMs: 60_000,
      maxBufferedBytes,
      onError: (e) => {
        throw e;
      },
    });
    const abort = new AbortController();
    const stream = eventsService.build({ ...ctx, eventHub: own }).watchEvents!(
      create(WatchEventsRequestSchema, {}),
      watchContext(identity, abort.signal),
    )[Symbol.asyncIterator]();
    const first = stream.next();
    await until(() => own.size === 1);
    // Its start (the latest seq) is read once the hub counts it; let it settle.
    await new Promise((r) => setTimeout(r, 50));
    const uid = await commit(group);
    let taken: IteratorResult<Event> | undefined;
    void first.then((r) => (taken = r as IteratorResult<Event>));
    for (let i = 0; i < 100 && !taken; i++) {
      own.wake();
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(taken?.value?.id).toBe(uid);
    return {
      hub: own,
      first: uid,
      stream,
      close: async () => {
        abort.abort();
        await own.close();
      },
    };
  }

  it("keeps for a stream that stops reading only the rows its caller may see: other organizations' events are not held for it", async () => {
    visibilityOf.set("stalled-1", { all: false, roots: ["orgs1"] });
    const { hub: own, stream, close } = await stalledStream("stalled-1", "orgs1");
    for (let i = 0; i < 5; i++) await commit("orgs2", undefined, { pad: "x".repeat(1000) });
    const mine = await commit("orgs1/team");
    own.wake();
    await until(() => own.buffered.rows > 0);
    await new Promise((r) => setTimeout(r, 50));
    // Of the six events, the one of its own organization waits; the others were never kept.
    expect(own.buffered.rows).toBe(1);
    expect(own.buffered.bytes).toBeLessThan(1000);
    expect(((await stream.next()).value as Event).id).toBe(mine);
    expect(own.buffered).toEqual({ rows: 0, bytes: 0 });
    await close();
  });

  it("ends a stream that stops reading once the rows waiting for it pass its bytes cap, with RESOURCE_EXHAUSTED; resuming after its last event loses nothing", async () => {
    visibilityOf.set("stalled-2", { all: false, roots: ["orgs3"] });
    const { hub: own, first, stream, close } = await stalledStream("stalled-2", "orgs3", 8_000);
    const big = [await commit("orgs3", undefined, { pad: "x".repeat(3000) })];
    own.wake();
    await until(() => own.buffered.rows === 1);
    // A second batch while the first waits: past 8,000 bytes.
    for (let i = 0; i < 2; i++) big.push(await commit("orgs3", undefined, { pad: "x".repeat(3000) }));
    own.wake();
    await until(() => own.size === 0);
    // Cut off: its rows let go at once, not when it next reads.
    expect(own.size).toBe(0);
    expect(own.buffered).toEqual({ rows: 0, bytes: 0 });
    const err = await stream.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConnectError);
    expect(err).toMatchObject({ code: Code.ResourceExhausted });
    expect((err as ConnectError).rawMessage).toMatch(
      /fell more than 8000 bytes of events behind; resume with after_id set to the last event id received/,
    );
    await close();
    const resumed = watch("stalled-2", { afterId: first });
    await until(() => resumed.got.length === 3);
    expect(resumed.got.map((e) => e.id)).toEqual(big);
    await resumed.stop();
  });

  it("matches live events in memory exactly as its SQL selects them, for every scope filter, visibility and field filter", async () => {
    const groups = [null, "orgm", "orgm/a", "orgm/a/b", "orgm/ab", "orgm/a0", "orgm/b", "orgn", "orgn/a", "orgm0", "orgm-x"];
    const uids: string[] = [];
    for (const g of groups) uids.push(await commit(g));
    const filters: Partial<UidpFilter>[] = [
      {},
      { inRoot: "orgm" },
      { inRoot: "orgm/a" },
      { descendantsOf: "orgm" },
      { descendantsOf: "orgm/a" },
      { childrenOf: "orgm" },
      { childrenOf: "orgm/a" },
      { ancestorsOf: "orgm/a/b" },
      { ancestorsOf: "orgn/a" },
      { ids: [uids[2]!, uids[7]!] },
      { inRoot: "orgm", ids: [uids[2]!, uids[7]!] },
    ];
    // Past INLINE_ROOTS roots, the SQL takes them as one array (and the matcher as a set): the same rows.
    const filler = Array.from({ length: INLINE_ROOTS }, (_, i) => `orgz${i}`);
    const visibilities: ListVisibility[] = [
      { all: true },
      { all: false, roots: ["orgm"] },
      { all: false, roots: ["orgm/a", "orgn"] },
      { all: false, roots: ["orgm/b"] },
      { all: false, roots: [...filler, "orgm/a", "orgn"].sort() },
      { all: false, roots: [...filler, "orgm/a/b", "orgm/ab", "orgm0", "orgn/a"].sort() },
    ];
    const ours = sql`${schema.events.uid} in (${sql.join(
      uids.map((u) => sql`${u}`),
      sql`, `,
    )})`;
    const rows = await handle.db.select().from(schema.events).where(ours).orderBy(asc(schema.events.seq));
    for (const f of filters) {
      const uidp = create(UIDPFilterSchema, f) as UidpFilter;
      for (const v of visibilities) {
        const where = and(ours, ...scopeConditions(eventsSource, uidp), visibilityCondition(eventsSource, v));
        const inSql = (
          await handle.db.select({ uid: schema.events.uid }).from(schema.events).where(where).orderBy(asc(schema.events.seq))
        ).map((r) => r.uid);
        const inScope = scopeMatcher(uidp);
        const visible = visibilityMatcher(v);
        const inMemory = rows.filter((r) => inScope(r) && visible(r)).map((r) => r.uid);
        expect(inMemory, `${JSON.stringify(f)} seen as ${JSON.stringify(v)}`).toEqual(inSql);
      }
    }
    const fields: Parameters<typeof eventMatcher>[0][] = [
      { type: "platform.test.b.v1", typePrefix: "", subject: "", actor: "" },
      { type: "", typePrefix: "platform.test.", subject: "", actor: "" },
      { type: "", typePrefix: "platform.test.b", subject: "", actor: "" },
      { type: "", typePrefix: "", subject: `s${seq}`, actor: "" },
      { type: "", typePrefix: "", subject: "", actor: "someone" },
    ];
    // Two more types beside the one of the rows above.
    uids.push(await commit("orgm", "platform.test.b.v1"), await commit("orgm", "platform.test.bc.v1"));
    const all = await handle.db.select().from(schema.events).where(ours).orderBy(asc(schema.events.seq));
    for (const f of fields) {
      const inSql = (
        await handle.db
          .select({ uid: schema.events.uid })
          .from(schema.events)
          .where(and(ours, ...eventFilters(f).where))
          .orderBy(asc(schema.events.seq))
      ).map((r) => r.uid);
      expect(
        all.filter(eventMatcher(f)).map((r) => r.uid),
        JSON.stringify(f),
      ).toEqual(inSql);
    }
  });
});
