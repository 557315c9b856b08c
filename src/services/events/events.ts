import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { and, asc, eq, gt, gte, lt, max, sql, type SQL } from "drizzle-orm";
import {
  EventSchema,
  EventsService,
  ListEventsResponseSchema,
  type Event,
  type ListEventsRequest,
  type WatchEventsRequest,
} from "../../../gen/platform/events/v2beta1/events_pb.js";
import { schema } from "../../db/index.js";
import { outOfRange, invalidArgument, unauthenticated } from "../../errors/index.js";
import { principalKey } from "../../caller/index.js";
import type { HubEvent } from "../../events/index.js";
import {
  listVisibilityKey,
  scopeMatcher,
  visibilityCondition,
  visibilityMatcher,
  type ExtraFilters,
  type ListSource,
  type ListVisibility,
  type UidpFilter,
} from "../../list/index.js";
import { scopeConditions } from "../../list/scope.js";
import { checkRequest } from "../../descriptors/index.js";
import { apiService } from "../api-service.js";
import type { ServiceContext } from "../context.js";
import { millisAtOrAfter, toTimestamp } from "../timestamps.js";
import { StreamBudget } from "./streams.js";

export { MAX_STREAMS_PER_IDENTITY, MAX_STREAMS_PER_ORGANIZATION, MAX_STREAMS_PER_SERVER } from "./stream-limits.js";

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
type EventFilterFields = Pick<ListEventsRequest, "type" | "typePrefix" | "subject" | "actor"> &
  Partial<Pick<ListEventsRequest, "since" | "until">>;

/** The type, subject, actor and time filters, shared by ListEvents and WatchEvents. */
export function eventFilters(req: EventFilterFields): ExtraFilters {
  for (const [field, value] of [
    ["type", req.type],
    ["type_prefix", req.typePrefix],
    ["subject", req.subject],
    ["actor", req.actor],
  ] as const) {
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
    key: {
      type: req.type,
      typePrefix: req.typePrefix,
      subject: req.subject,
      actor: req.actor,
      since: since?.toISOString() ?? null,
      until: until?.toISOString() ?? null,
    },
  };
}

/** In memory, what eventFilters selects in SQL apart from time (which WatchEvents has not): for events as they arrive. */
export function eventMatcher(req: Pick<ListEventsRequest, "type" | "typePrefix" | "subject" | "actor">): (row: EventRow) => boolean {
  return (row) =>
    (!req.type || row.type === req.type) &&
    (!req.typePrefix || row.type.startsWith(req.typePrefix)) &&
    (!req.subject || row.subject === req.subject) &&
    (!req.actor || row.actor === req.actor);
}

/** What a watch matches apart from the caller's visibility, which is checked again as it runs: in SQL (its replay) and in memory (live events). */
function watchFilters(req: WatchEventsRequest, context: HandlerContext): { where: SQL[]; accepts: (row: HubEvent) => boolean } {
  // The pipeline checks unary requests; a streaming method's request reaches the handler unchecked.
  checkRequest(context.method, req as unknown as Record<string, unknown>);
  const uidp: UidpFilter | undefined = req.uidp;
  // Both validate: what reaches the matchers below is well-formed.
  const where = [...scopeConditions(eventsSource, uidp), ...eventFilters(req).where];
  const inScope = scopeMatcher(uidp);
  const matches = eventMatcher(req);
  return { where, accepts: (row) => matches(row) && inScope(row) };
}

/** A timer never waits longer than this (Node's limit); a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const eventsService = apiService(EventsService, (ctx: ServiceContext): ServiceImpl<typeof EventsService> => {
  const streams = new StreamBudget(ctx.eventStreams);

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
      const visibility = await visibleNow();
      const release = streams.admit(principal.identityUid, visibility, req.uidp);
      try {
        yield* watch(req, context, filters, visibility, visibleNow, principal.expiry);
      } finally {
        release();
      }
    },
  };

  async function* watch(
    req: WatchEventsRequest,
    context: HandlerContext,
    filters: { where: SQL[]; accepts: (row: HubEvent) => boolean },
    admitted: ListVisibility,
    visibleNow: () => Promise<ListVisibility>,
    expiry: Date,
  ): AsyncGenerator<Event> {
    const hub = ctx.eventHub;
    // What the caller could see at the last check, renewed at each: the hub keeps only the rows it
    // accepts for this stream, so a stream that stops reading holds its caller's events, not
    // every organization's. An event recorded while the caller could not see it is not sent later,
    // even if their access widens (docs/design.md, "Watching").
    let visible = visibilityMatcher(admitted);
    const checkVisibility = async () => {
      const visibility = await visibleNow();
      visible = visibilityMatcher(visibility);
      return visibility;
    };
    // An idle stream hears of no batch to check its token at, so it also ends when the token expires.
    const expired = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const waitForExpiry = () => {
      const left = expiry.getTime() - ctx.clock().getTime();
      if (left <= 0) expired.abort();
      else timer = setTimeout(waitForExpiry, Math.min(left, MAX_TIMER_MS)).unref();
    };
    // Listening before the replay: an event committed meanwhile is either replayed or arrives here.
    // The hub hands over the rows the filters accept, read once for every watcher of the replica.
    const live = await hub.subscribe(AbortSignal.any([context.signal, expired.signal]), (row) => filters.accepts(row) && visible(row));
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
        const from = await resumePoint(req.afterId, await checkVisibility());
        if (from === undefined)
          throw invalidArgument("after_id", "names no event (it may have been pruned); list the events to find where to resume");
        isNew = (seq) => seq > from && !replayed.has(seq);
        let after = from;
        for (;;) {
          const rows = await replayPage(filters.where, await checkVisibility(), after);
          for (const row of rows) {
            if (replayed.size >= MAX_REPLAY) {
              throw outOfRange(
                `more than ${MAX_REPLAY} events to replay after ${req.afterId}: page through them with ListEvents, then watch after the last one`,
              );
            }
            replayed.add(row.seq);
            yield toEventMessage(row);
          }
          if (rows.length < REPLAY_PAGE) break;
          after = rows[rows.length - 1]!.seq;
        }
      }
      for await (const batch of live) {
        if (!batch.seqs.some(isNew)) continue;
        // No query: the rows came with the batch. Only the caller's access is checked again (from
        // the grants cache), for every batch with something new, whether or not it matches.
        await checkVisibility();
        for (const row of batch.rows) if (isNew(row.seq) && visible(row)) yield toEventMessage(row);
      }
      // The hub let go: the client left, the server is shutting down, or the token expired (which
      // this check then reports).
      if (expired.signal.aborted) await visibleNow();
    } finally {
      clearTimeout(timer);
      live.close();
    }
  }

  /** The seq of the event `uid`, when the caller may see it: another organization's id resumes nothing. */
  async function resumePoint(uid: string, visibility: ListVisibility): Promise<number | undefined> {
    const visible = visibilityCondition(eventsSource, visibility);
    const [from] = await ctx.db
      .select({ seq: events.seq })
      .from(events)
      .where(and(eq(events.uid, uid), visible));
    return from?.seq;
  }

  /**
   * The next page of the replay: the matching events after seq `after` that the caller may see,
   * REPLAY_PAGE at most. The caller's groups are ranges of events_parent_uid_idx, so the planner
   * reads their events only (a bitmap of that index) rather than every organization's after `after`,
   * or, when `after` is recent, the few events after it (docs/design.md, "Watching").
   */
  async function replayPage(where: SQL[], visibility: ListVisibility, after: number): Promise<EventRow[]> {
    const visible = visibilityCondition(eventsSource, visibility);
    return ctx.db
      .select()
      .from(events)
      .where(and(...where, visible, gt(events.seq, after)))
      .orderBy(asc(events.seq))
      .limit(REPLAY_PAGE);
  }
});
