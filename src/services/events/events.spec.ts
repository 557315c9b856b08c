import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext, type ServiceImpl } from "@connectrpc/connect";
import { and, asc, sql } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { EventsService, WatchEventsRequestSchema, type Event } from "../../../gen/platform/events/v2beta1/events_pb.js";
import { UIDPFilterSchema } from "../../../gen/platform/common/v1/uidp_pb.js";
import { QuotaFailureSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { testEventRecorder } from "../../../test/support/event-recorder.js";
import { migratedStorePerFile } from "../../../test/support/fresh-store.js";
import { principalKey } from "../../auth/index.js";
import { SecretBox } from "../../crypto/index.js";
import { schema, type Database, type DatabaseHandle } from "../../db/index.js";
import { Egress } from "../../egress/index.js";
import { EventHub } from "../../events/index.js";
import { INLINE_ROOTS, ListEngine, scopeMatcher, visibilityCondition, visibilityMatcher, type ListVisibility, type UidpFilter } from "../../list/index.js";
import { scopeConditions } from "../../list/scope.js";
import type { ServiceContext } from "../context.js";
import { eventFilters, eventMatcher, eventsService, eventsSource } from "./events.js";
import { DEFAULT_EVENT_STREAM_LIMITS } from "./streams.js";

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
  hub = new EventHub({ db, pollMs: 60_000, onError: (e) => { throw e; } });
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
  };
});

let seq = 1000;
/** An event row in `group`, as if its transaction committed now; returns its uid. */
async function commit(group: string | null, type = "platform.test.thing.created.v1"): Promise<string> {
  seq++;
  const uid = `e${String(seq).padStart(8, "0")}`;
  await handle.db.execute(sql`
    insert into events (uid, seq, type, source, subject, actor, parent_uid, time, data)
    values (${uid}, ${seq}, ${type}, 'https://test', ${`s${seq}`}, '', ${group}, now(), '{}')`);
  return uid;
}

/** The service as the server builds it once (its stream counts are its own). */
let service: ServiceImpl<typeof EventsService> | undefined;

/** A WatchEvents stream of `identity` collecting into `got`; `stop` ends it and settles when it has. */
function watch(identity: string, init: MessageInitShape<typeof WatchEventsRequestSchema> = {}, on = (service ??= eventsService(ctx))) {
  const abort = new AbortController();
  const context = createHandlerContext({
    service: EventsService,
    method: EventsService.method.watchEvents,
    protocolName: "connect",
    requestMethod: "POST",
    url: "http://test/platform.events.v2beta1.EventsService/WatchEvents",
    requestSignal: abort.signal,
    contextValues: createContextValues().set(principalKey, { identityUid: identity, audience: "test", expiry: new Date(Date.now() + 3_600_000) }),
  });
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
    const capped = eventsService({ ...ctx, eventStreams: { perServer: 4, perOrganization: 3, perIdentity: 2 } });
    for (const [who, org] of [["cap-1", "orgc1"], ["cap-2", "orgc1"], ["cap-3", "orgc2"], ["cap-4", "orgc3"]] as const) {
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
    const ours = sql`${schema.events.uid} in (${sql.join(uids.map((u) => sql`${u}`), sql`, `)})`;
    const rows = await handle.db.select().from(schema.events).where(ours).orderBy(asc(schema.events.seq));
    for (const f of filters) {
      const uidp = create(UIDPFilterSchema, f) as UidpFilter;
      for (const v of visibilities) {
        const where = and(ours, ...scopeConditions(eventsSource, uidp), visibilityCondition(eventsSource, v));
        const inSql = (await handle.db.select({ uid: schema.events.uid }).from(schema.events).where(where).orderBy(asc(schema.events.seq))).map((r) => r.uid);
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
      const inSql = (await handle.db.select({ uid: schema.events.uid }).from(schema.events).where(and(ours, ...eventFilters(f).where)).orderBy(asc(schema.events.seq))).map((r) => r.uid);
      expect(all.filter(eventMatcher(f)).map((r) => r.uid), JSON.stringify(f)).toEqual(inSql);
    }
  });
});
