import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { and, asc, eq, gt, gte, inArray, lt, max, sql, type SQL } from "drizzle-orm";
import { EventSchema, EventsService, ListEventsResponseSchema, type Event, type ListEventsRequest, type WatchEventsRequest } from "../../../gen/platform/events/v2beta1/events_pb.js";
import { inPieces, organizationOf, schema, type Executor } from "../../db/index.js";
import { outOfRange, invalidArgument, resourceExhausted, unauthenticated } from "../../errors/index.js";
import { principalKey } from "../../auth/index.js";
import { listVisibilityKey, visibilityCondition, type ExtraFilters, type ListSource, type UidpFilter } from "../../list/index.js";
import { scopeConditions } from "../../list/scope.js";
import type { ServiceContext } from "../context.js";
import { checkRequest } from "../request-check.js";
import { millisAtOrAfter, toTimestamp } from "../timestamps.js";

const { events } = schema;
type EventRow = typeof events.$inferSelect;

/** The audit log as the List engine reads it: scoped and made visible by the event's group. */
export const eventsSource: ListSource<typeof events> = {
  table: events,
  uid: events.uid,
  parentUid: events.parentUid,
  path: events.parentUid,
  isGroup: false,
  sortable: { time: events.time },
};

/** Events replayed by one WatchEvents call at most; an older resume point pages with ListEvents first. */
export const MAX_REPLAY = 10_000;
const REPLAY_PAGE = 500;
const MAX_ID_LENGTH = 64;
const MAX_FILTER_LENGTH = 512;

export function toEventMessage(row: EventRow): Event {
  return create(EventSchema, {
    id: row.uid,
    source: row.source,
    type: row.type,
    subject: row.subject,
    time: toTimestamp(row.time),
    actor: row.actor,
    group: row.parentUid ?? "",
    data: row.data as never,
  });
}

/** What ListEvents and WatchEvents filter on (WatchEvents has no time bounds). */
type EventFilterFields = Pick<ListEventsRequest, "type" | "typePrefix" | "subject" | "actor"> & Partial<Pick<ListEventsRequest, "since" | "until">>;

/** The type, subject, actor and time filters, shared by ListEvents and WatchEvents. */
export function eventFilters(req: EventFilterFields): ExtraFilters {
  for (const [field, value] of [["type", req.type], ["type_prefix", req.typePrefix], ["subject", req.subject], ["actor", req.actor]] as const) {
    if (value.length > MAX_FILTER_LENGTH) throw invalidArgument(field, `must be at most ${MAX_FILTER_LENGTH} characters`);
  }
  const where: SQL[] = [];
  if (req.type) where.push(eq(events.type, req.type));
  if (req.typePrefix) where.push(sql`starts_with(${events.type}, ${req.typePrefix})`);
  if (req.subject) where.push(eq(events.subject, req.subject));
  if (req.actor) where.push(eq(events.actor, req.actor));
  // The request check has kept both within years 1–9999.
  const since = req.since ? millisAtOrAfter(req.since) : undefined;
  const until = req.until ? millisAtOrAfter(req.until) : undefined;
  if (since) where.push(gte(events.time, since));
  if (until) where.push(lt(events.time, until));
  return {
    where,
    key: { type: req.type, typePrefix: req.typePrefix, subject: req.subject, actor: req.actor, since: since?.toISOString() ?? null, until: until?.toISOString() ?? null },
  };
}

/** What a watch matches apart from the caller's visibility, which is checked again as it runs. */
function watchFilters(req: WatchEventsRequest, context: HandlerContext): SQL[] {
  // The pipeline checks unary requests; a streaming method's request reaches the handler unchecked.
  checkRequest(context.method, req as unknown as Record<string, unknown>);
  const uidp: UidpFilter | undefined = req.uidp;
  return [...scopeConditions(eventsSource, uidp), ...eventFilters(req).where];
}

/** A timer never waits longer than this (Node's limit); a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Open WatchEvents streams one identity may hold on one server. */
export const MAX_STREAMS_PER_IDENTITY = 16;
/**
 * Open streams that may read one organization's events on one server, whoever holds them: each
 * stream runs a query per batch of new events, and an owner can make identities at will (its
 * own, or people through its identity provider).
 */
export const MAX_STREAMS_PER_ORGANIZATION = 64;

/** Open streams per key, refused past a limit. */
class StreamCounts {
  private readonly open = new Map<string, number>();
  constructor(private readonly limit: number) {}
  full(key: string): boolean {
    return (this.open.get(key) ?? 0) >= this.limit;
  }
  add(key: string): void {
    this.open.set(key, (this.open.get(key) ?? 0) + 1);
  }
  remove(key: string): void {
    const left = (this.open.get(key) ?? 1) - 1;
    if (left > 0) this.open.set(key, left);
    else this.open.delete(key);
  }
}

export function eventsService(ctx: ServiceContext): ServiceImpl<typeof EventsService> {
  const streamsOf = new StreamCounts(MAX_STREAMS_PER_IDENTITY);
  const streamsIn = new StreamCounts(MAX_STREAMS_PER_ORGANIZATION);
  const select = (db: Executor, where: SQL[], limit: number) =>
    db.select().from(events).where(and(...where)).orderBy(asc(events.seq)).limit(limit);

  return {
    async listEvents(req: ListEventsRequest, context) {
      const params = { ...req, orderBy: req.orderBy.trim() === "" ? "time" : req.orderBy };
      const page = await ctx.list.list(ctx.db, eventsSource, params, context.values.get(listVisibilityKey), eventFilters(req));
      return create(ListEventsResponseSchema, { ...page, events: page.rows.map(toEventMessage) });
    },

    async *watchEvents(req, context) {
      const principal = context.values.get(principalKey);
      if (!principal) throw unauthenticated("missing credentials");
      const filters = watchFilters(req, context);
      // The caller's visibility now: checked at the start and before each replay page or live batch,
      // so that the stream ends, or narrows, once the token expires or the bindings change.
      const visibleNow = () => ctx.access.visibilityNow(principal, context.method);
      const conditions = async () => {
        const visible = visibilityCondition(eventsSource, await visibleNow());
        return visible ? [...filters, visible] : filters;
      };
      const visibility = await visibleNow();
      // The organizations whose events it reads: whoever the caller is (an organization's own
      // identity, or a person signed in through its identity provider), their streams count there.
      // A stream scoped to a group of one of them counts in that one only (one scoped elsewhere
      // still counts in all); a caller who sees everything (a platform administrator) counts in none.
      const visibleIn = visibility.all ? [] : [...new Set(visibility.roots.map(organizationOf))];
      const scope = req.uidp ? [req.uidp.inRoot, req.uidp.childrenOf, req.uidp.descendantsOf, req.uidp.ancestorsOf].find((g) => g) : undefined;
      const scoped = scope ? visibleIn.filter((o) => o === organizationOf(scope)) : [];
      const organizations = scoped.length ? scoped : visibleIn;
      const watcher = principal.identityUid;
      if (streamsOf.full(watcher)) {
        throw resourceExhausted(`at most ${MAX_STREAMS_PER_IDENTITY} WatchEvents streams per identity on one server; close one first`);
      }
      const full = organizations.find((o) => streamsIn.full(o));
      if (full !== undefined) {
        throw resourceExhausted(`at most ${MAX_STREAMS_PER_ORGANIZATION} WatchEvents streams may read organization ${full}'s events on one server; close one first`);
      }
      streamsOf.add(watcher);
      for (const o of organizations) streamsIn.add(o);
      try {
        yield* watch(req, context, conditions, principal.expiry);
      } finally {
        streamsOf.remove(watcher);
        for (const o of organizations) streamsIn.remove(o);
      }
    },
  };

  async function* watch(
    req: WatchEventsRequest,
    context: HandlerContext,
    conditions: () => Promise<SQL[]>,
    expiry: Date,
  ): AsyncGenerator<Event> {
    const hub = ctx.eventHub;
    // An idle stream hears of no batch to check its token at, so it also ends when the token expires.
    const expired = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const waitForExpiry = () => {
      const left = expiry.getTime() - ctx.clock().getTime();
      if (left <= 0) expired.abort();
      else timer = setTimeout(waitForExpiry, Math.min(left, MAX_TIMER_MS)).unref();
    };
    // Listening before the replay: an event committed meanwhile is either replayed or arrives here.
    const live = await hub.subscribe(AbortSignal.any([context.signal, expired.signal]));
    waitForExpiry();
    try {
      // The stream starts after the resume point, or now: what the hub hands out from before
      // (its cursor may lag behind) or what the replay already sent is not new to it.
      const replayed = new Set<number>();
      let isNew: (seq: number) => boolean;
      if (!req.afterId) {
        const [last] = await ctx.db.select({ seq: max(events.seq) }).from(events);
        const startedAt = last?.seq ?? 0;
        isNew = (seq) => seq > startedAt;
      } else {
        if (req.afterId.length > MAX_ID_LENGTH) throw invalidArgument("after_id", "is not an event id");
        const [from] = await ctx.db.select({ seq: events.seq }).from(events).where(eq(events.uid, req.afterId));
        if (!from) throw invalidArgument("after_id", "names no event (it may have been pruned); list the events to find where to resume");
        isNew = (seq) => seq > from.seq && !replayed.has(seq);
        let after = from.seq;
        for (;;) {
          const rows = await select(ctx.db, [...(await conditions()), gt(events.seq, after)], REPLAY_PAGE);
          for (const row of rows) {
            if (replayed.size >= MAX_REPLAY) {
              throw outOfRange(`more than ${MAX_REPLAY} events to replay after ${req.afterId}: page through them with ListEvents, then watch after the last one`);
            }
            replayed.add(row.seq);
            yield toEventMessage(row);
          }
          if (rows.length < REPLAY_PAGE) break;
          after = rows[rows.length - 1]!.seq;
        }
      }
      for await (const seqs of live) {
        const fresh = seqs.filter(isNew);
        if (fresh.length === 0) continue;
        const where = await conditions();
        // In pieces: a far-behind watcher's batch could exceed PostgreSQL's bind-parameter limit.
        for (const piece of inPieces(fresh)) {
          for (const row of await select(ctx.db, [...where, inArray(events.seq, piece)], piece.length)) yield toEventMessage(row);
        }
      }
      // The hub let go: the client left, the server is shutting down, or the token expired (which
      // this check then reports).
      if (expired.signal.aborted) await conditions();
    } finally {
      clearTimeout(timer);
      live.close();
    }
  }
}
