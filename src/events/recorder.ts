import { clone, type DescMessage, type DescMethod, type JsonValue, type Message } from "@bufbuild/protobuf";
import type { ContextValues } from "@connectrpc/connect";
import { sql, type SQL } from "drizzle-orm";
import { principalKey } from "../caller/index.js";
import { randomUint64 } from "../crypto/index.js";
import { groupAndAncestors, runCompiled, type CompiledStatement, type Executor } from "../db/index.js";
import { declaredEventType, withoutInputOnly } from "../descriptors/index.js";

/** The part of a call a recorded change needs: the method (its declared type) and the caller. */
export interface ChangeCall {
  method: DescMethod;
  values: ContextValues;
}

/** One change of one resource. */
export interface Change {
  /** The resource's message type, for its JSON. */
  schema: DescMessage;
  subject: string;
  /** The group the change belongs to; null for global resources. */
  group: string | null;
  before?: Message | undefined;
  after?: Message | undefined;
}

/** An event that is not a resource change (token exchanges, sign-ins). */
export interface PlainEvent {
  type: string;
  subject: string;
  actor: string;
  group: string | null;
  data: Record<string, JsonValue>;
}

export interface EventRecorderOptions {
  /** CloudEvents `source`: the API base URL. */
  source: string;
  clock: () => Date;
  /** The API's JSON for a message (the REST renderer). */
  render: (schema: DescMessage, message: Message) => JsonValue;
  /** How long a failing webhook delivery is retried. */
  retryForMs: number;
  /**
   * Tells every replica that events were recorded, and whether webhook deliveries
   * were written with them (NOTIFY outside any transaction).
   */
  announce: (deliveries: boolean) => Promise<void>;
  onError: (e: unknown) => void;
}

/** An event row's insert, before its values: `VALUES (…)`, or `SELECT … FROM w` in a create's one statement. */
const EVENT_INSERT = sql.raw("INSERT INTO events (uid, type, source, subject, actor, parent_uid, time, data)");

/** How long announcements are gathered before one NOTIFY goes out. */
const ANNOUNCE_DELAY_MS = 5;

/** The last id this process made: its time and random part, which the next id in the same millisecond increments. */
let lastId = { ms: -1, random: 0n };
const RANDOM_LIMIT = 1n << 64n;

/**
 * An event id: the time in milliseconds, then 64 random bits, in hex, so ids sort in recording
 * order. Within one millisecond the random part counts up from the last id's, so the events of one
 * change (a group and its owner binding) keep their order in a list by time; across replicas,
 * events of the same millisecond sort by their random parts. An id never sorts before the last one
 * this process made, even when the clock steps back.
 */
export function newEventUid(time: Date): string {
  let ms = time.getTime();
  let random: bigint;
  if (ms > lastId.ms) random = randomUint64();
  else {
    ms = lastId.ms;
    random = lastId.random + 1n;
    // Out of room in this millisecond (after 2^64 ids, or a random start near the top): the next one.
    if (random >= RANDOM_LIMIT) [ms, random] = [ms + 1, randomUint64() >> 1n];
  }
  lastId = { ms, random };
  return ms.toString(16).padStart(12, "0") + random.toString(16).padStart(16, "0");
}

/** Who made a call's change: its authenticated identity. */
export function actorOf(call: ChangeCall): string {
  return call.values.get(principalKey)?.identityUid ?? "";
}

/** Rows a write statement affected, on either driver (postgres.js: `count`; PGlite: `affectedRows`). */
function affectedRows(result: unknown): number {
  const r = result as { count?: number; affectedRows?: number };
  return r.count ?? r.affectedRows ?? 0;
}

/**
 * Writes events into the transaction of the change they describe (docs/design.md,
 * "Events"), together with one pending delivery per matching webhook
 * subscription, in one statement. Commit makes the change, its event and its
 * deliveries visible at once; a rollback takes all three back.
 */
export class EventRecorder {
  private announcing: Promise<void> | undefined;
  private again = false;
  /** Deliveries were written since the last announcement: dispatchers need to hear of it. */
  private deliveriesWritten = false;
  private deliveriesAgain = false;
  private closed = false;

  constructor(private readonly opts: EventRecorderOptions) {}

  /** The time events are stamped with now (the injected clock). */
  now(): Date {
    return this.opts.clock();
  }

  /**
   * Call after a transaction that recorded events has committed: watchers and
   * dispatchers on every replica look for them. Announcements are gathered for
   * ANNOUNCE_DELAY_MS and sent as one, so a burst of writes costs one NOTIFY, not
   * one each (each is a statement and a socket write).
   */
  announce(): void {
    if (this.closed) return;
    if (this.announcing) {
      this.again = true;
      return;
    }
    this.announcing = new Promise<void>((resolve) => setTimeout(resolve, ANNOUNCE_DELAY_MS))
      .then(() => {
        if (this.closed) return;
        // Written rows may belong to a transaction that has not committed yet: its own
        // announcement comes after its commit, and must wake the dispatchers too.
        const deliveries = this.deliveriesWritten || this.deliveriesAgain;
        this.deliveriesAgain = this.deliveriesWritten;
        this.deliveriesWritten = false;
        this.again = false;
        return this.opts.announce(deliveries);
      })
      .catch(this.opts.onError)
      .finally(() => {
        this.announcing = undefined;
        if (this.again) {
          this.again = false;
          this.announce();
        }
      });
  }

  /** Sends what is gathered and stops announcing (before the database closes). */
  async close(): Promise<void> {
    await this.announcing;
    this.closed = true;
  }

  /** Records the change `call` made, as the type its method declares (nothing when it declares none). */
  async change(tx: Executor, call: ChangeCall, change: Change): Promise<void> {
    const type = declaredEventType(call.method);
    if (type) await this.changeBy(tx, type, actorOf(call), change);
  }

  /**
   * Records a change the server made outside an API call, as the type an API method declares for
   * the same change (a binding made at sign-in is a `role_binding.created` like any other).
   */
  async changeBy(tx: Executor, type: string, actor: string, change: Change): Promise<void> {
    await this.insert(tx, { type, subject: change.subject, actor, group: change.group, data: this.data(change) });
  }

  private data(change: Change): Record<string, JsonValue> {
    const data: Record<string, JsonValue> = {};
    if (change.before) data["before"] = this.json(change.schema, change.before);
    if (change.after) data["after"] = this.json(change.schema, change.after);
    return data;
  }

  /**
   * Makes a change and records it in ONE statement (docs/design.md, "Writes"): `write` is the
   * statement's leading `WITH` parts, ending in `w`, an INSERT of a row the caller already knows
   * (src/db/known-insert.ts). The event is made FROM `w`, so it is written, and takes its sequence
   * number, only after the row is: a create refused (a duplicate, a missing reference) takes none.
   * The change, its event and its deliveries commit together with no transaction of their own: one
   * round trip, not four. The statement is compiled once per shape (src/db/compiled.ts). Answers
   * whether the row was written.
   */
  async changeWith(db: Executor, call: ChangeCall, change: Change, write: CompiledStatement): Promise<boolean> {
    const type = declaredEventType(call.method);
    if (!type) {
      const [r] = await runCompiled<{ written: number }>(db, {
        key: `${write.key} alone`,
        build: () => sql`WITH ${write.build()} SELECT count(*)::int AS written FROM w`,
        values: write.values,
      });
      return r!.written > 0;
    }
    const time = this.opts.clock();
    const ancestors = change.group ? groupAndAncestors(change.group) : [];
    const values: Record<string, unknown> = {
      ...write.values,
      e_uid: newEventUid(time),
      e_type: type,
      e_source: this.opts.source,
      e_subject: change.subject,
      e_actor: actorOf(call),
      e_group: change.group,
      e_time: time.toISOString(),
      e_data: JSON.stringify(this.data(change)),
      e_deadline: new Date(time.getTime() + this.opts.retryForMs).toISOString(),
    };
    for (const [i, g] of ancestors.entries()) values[`g${i}`] = g;
    const p = (name: string) => sql.placeholder(name);
    const event = sql`${EVENT_INSERT}
      SELECT ${p("e_uid")}, ${p("e_type")}, ${p("e_source")}, ${p("e_subject")}, ${p("e_actor")}, ${p("e_group")}, ${p("e_time")}, ${p("e_data")}::jsonb FROM w`;
    if (!change.group) {
      const [r] = await runCompiled<{ written: number }>(db, {
        key: `${write.key} with a global event`,
        build: () => sql`WITH ${write.build()}, e AS (${event}) SELECT count(*)::int AS written FROM w`,
        values,
      });
      return r!.written > 0;
    }
    const groups = sql.join(
      ancestors.map((_, i) => p(`g${i}`)),
      sql`, `,
    );
    const [r] = await runCompiled<{ written: number; deliveries: number }>(db, {
      // The shape: the insert's, and how many groups the event's deliveries may come from.
      key: `${write.key} with an event in ${ancestors.length} groups`,
      build: () => sql`WITH ${write.build()}, e AS (${event} RETURNING seq),
        d AS (${this.deliveries(p("e_uid"), p("e_subject"), p("e_type"), p("e_time"), p("e_deadline"), groups)} RETURNING 1)
        SELECT (SELECT count(*)::int FROM w) AS written, (SELECT count(*)::int FROM d) AS deliveries`,
      values,
    });
    if (r!.deliveries > 0) this.deliveriesWritten = true;
    return r!.written > 0;
  }

  /** Records what `call` did as the type its method declares, with `data` as given (an import's outcomes). */
  async call(tx: Executor, call: ChangeCall, event: Omit<PlainEvent, "type" | "actor">): Promise<void> {
    const type = declaredEventType(call.method);
    if (type) await this.insert(tx, { ...event, type, actor: actorOf(call) });
  }

  /** Records an event that is not made by an API call (token exchanges, sign-ins). */
  async record(tx: Executor, event: PlainEvent): Promise<void> {
    await this.insert(tx, event);
  }

  private json(schema: DescMessage, message: Message): JsonValue {
    // A copy: the caller's message is its answer, which may still carry a secret to return once.
    return this.opts.render(schema, withoutInputOnly(schema, clone(schema, message)));
  }

  private async insert(tx: Executor, e: PlainEvent): Promise<void> {
    const time = this.opts.clock();
    const deadline = new Date(time.getTime() + this.opts.retryForMs);
    const uid = newEventUid(time);
    const event = sql`${EVENT_INSERT}
      VALUES (${uid}, ${e.type}, ${this.opts.source}, ${e.subject}, ${e.actor}, ${e.group}, ${time.toISOString()}, ${JSON.stringify(e.data)}::jsonb)`;
    // A global event (no group) goes to no subscription: subscriptions live in groups.
    if (!e.group) {
      await tx.execute(event);
      return;
    }
    const groups = sql.join(
      groupAndAncestors(e.group).map((g) => sql`${g}`),
      sql`, `,
    );
    const deliveries = this.deliveries(uid, e.subject, e.type, time.toISOString(), deadline.toISOString(), groups);
    if (affectedRows(await tx.execute(sql`WITH e AS (${event} RETURNING seq) ${deliveries}`)) > 0) this.deliveriesWritten = true;
  }

  /**
   * The deliveries of the event in `e` (a `WITH` part returning its `seq`): one per active
   * subscription at the event's group or above (`groups`) whose type prefixes match (none: every
   * type); a stopped one gets nothing, not even a backlog for later. Values are given or placeholders.
   * Locked FOR KEY SHARE: a subscription being deleted meanwhile is waited for and then left
   * out. Unlocked, the statement saw it, and the delivery's foreign key then failed the write.
   */
  private deliveries(uid: unknown, subject: unknown, type: unknown, time: unknown, deadline: unknown, groups: SQL): SQL {
    return sql`INSERT INTO event_deliveries (subscription_uid, event_uid, event_seq, subject, next_attempt_time, deadline)
      SELECT s.uid, ${uid}, e.seq, ${subject}, ${time}, ${deadline}
      FROM e, subscriptions s
      WHERE s.parent_uid IN (${groups}) AND s.state = 'active'
        AND (jsonb_array_length(s.types) = 0 OR EXISTS (
          SELECT 1 FROM jsonb_array_elements_text(s.types) p WHERE starts_with(${type}, p)))
      FOR KEY SHARE OF s`;
  }
}
