import { sql, type SQL } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import type { SecretBox } from "../crypto/index.js";
import { organizationOf, queryRows, type Database } from "../db/index.js";
import { EgressError, type EgressFetch } from "../egress/index.js";
import { cloudEvent, type EventRow } from "./cloud-event.js";
import { creatorRefusal, type GrantsOf } from "./creator-check.js";
import { failurePauseMs } from "./failure-pause.js";
import { stopSubscriptions } from "./stop-subscriptions.js";

/** What a subscription's sealed secret is bound to: its own row. */
export function subscriptionSecretContext(uid: string): string {
  return `subscriptions.secret:${uid}`;
}

export interface DispatcherOptions {
  db: Database;
  /** The egress guard's fetch: deliveries reach public addresses only (loopback in development). */
  fetch: EgressFetch;
  secrets: SecretBox;
  /** Grants as the grants cache has them: each delivery is sent only while its subscription's creator may list its events. */
  grantsOf: GrantsOf;
  clock: () => Date;
  /** The first retry's delay; each next one doubles it, up to an hour. */
  backoffMs: number;
  /** How long a claimed delivery is this replica's; after that another may take it over. */
  leaseMs?: number;
  /** Deliveries this replica sends at once, all subscriptions together. */
  maxInFlight?: number;
  /** Deliveries of one subscription this replica sends at once, so that one slow sink cannot take every slot. */
  maxInFlightPerSubscription?: number;
  /** Deliveries of one organization's subscriptions this replica sends at once: many slow sinks of one tenant cannot either. */
  maxInFlightPerOrganization?: number;
  /** How often due retries are looked for when no event wakes the dispatcher. */
  pollMs?: number;
  onError: (e: unknown) => void;
  /** A delivery's failure in full, for the log (subscriptions show only its kind). */
  onDeliveryError: (sink: string, e: unknown) => void;
}

const MAX_BACKOFF_MS = 3_600_000;
/** How long stop() still waits, after cutting deliveries off, for their claims to be released. */
const STOP_SETTLE_MS = 1000;
/** How many due deliveries a claim looks at to choose from, fairly across subscriptions. */
const CLAIM_CANDIDATES = 64;
/** The defaults of the in-flight caps (docs/events.md, "Events and webhooks"): a quarter of the slots per organization, half that per subscription. */
export const DEFAULT_MAX_IN_FLIGHT = 32;
export const DEFAULT_MAX_IN_FLIGHT_PER_ORGANIZATION = 8;
export const DEFAULT_MAX_IN_FLIGHT_PER_SUBSCRIPTION = 4;
/** Why a delivery claimed for a subscription stopped meanwhile is not sent (its subscription's last error says why it stopped). */
const STOPPED = "the subscription is stopped";

/** The last error a subscription shows for each kind of egress failure. */
const DELIVERY_FAILURES: Record<EgressError["failure"], string> = {
  url: "the sink is not a URL events may be sent to",
  address: "the sink's host did not resolve to a public address",
  timeout: "the sink did not answer in time",
  network: "the sink could not be reached",
  redirect: "the sink answered with a redirect, which is not followed",
  busy: "too many deliveries were in flight; it will be retried",
  too_large: "the sink's answer was too large",
  answer: "the sink's answer could not be read",
};

interface Claimed extends EventRow {
  id: string | number;
  attempts: number;
  deadline: Date | string;
  subscription_uid: string;
  sink: string;
  secret: string;
  /** The subscription's state, group and creator, as the claim found them. */
  subscription_state: string;
  subscription_group: string;
  creator_uid: string | null;
}

/**
 * Sends pending webhook deliveries (docs/design.md, "Webhooks"). Any number of
 * replicas run one each: a delivery is claimed with FOR UPDATE SKIP LOCKED and
 * a lease, so two replicas never hold it at once; a replica that dies mid-way
 * leaves a lease that runs out, and the delivery is sent again. A delivery
 * waits while an earlier event about the same subject is still pending for
 * its subscription, so each receiver sees a subject's events in order.
 * Deliveries run side by side up to a cap, with smaller caps per subscription and
 * per organization: a slow sink holds at most its subscription's share of the
 * slots, a tenant's many slow sinks at most its organization's. Each delivery is
 * sent only while the subscription's creator may list its events; one that may
 * not is not sent, and the subscription is stopped.
 */
export class WebhookDispatcher {
  private readonly leaseMs: number;
  private readonly maxInFlight: number;
  private readonly maxPerSubscription: number;
  private readonly maxPerOrganization: number;
  private readonly pollMs: number;
  private running = false;
  private woken = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Ends the current wait, pause or not (resume()). */
  private endPause: (() => void) | undefined;
  /** Counts resume() calls: a round that fails after one began has no pause to take. */
  private resumes = 0;
  /** Wake-ups for this replica's own retries, so that a short backoff is not stretched to the poll interval. */
  private readonly retries = new Set<NodeJS.Timeout>();
  /** The deliveries being sent, each until it is settled (or its claim released). */
  private readonly inFlight = new Set<Promise<void>>();
  /** How many of each subscription's deliveries are in flight. */
  private readonly inFlightBySubscription = new Map<string, number>();
  /** How many of each organization's deliveries are in flight. */
  private readonly inFlightByOrganization = new Map<string, number>();
  /** Aborts the deliveries still in flight when stop()'s grace runs out. */
  private stopping = new AbortController();

  constructor(private readonly opts: DispatcherOptions) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.maxInFlight = opts.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.maxPerOrganization = Math.min(opts.maxInFlightPerOrganization ?? DEFAULT_MAX_IN_FLIGHT_PER_ORGANIZATION, this.maxInFlight);
    this.maxPerSubscription = Math.min(opts.maxInFlightPerSubscription ?? DEFAULT_MAX_IN_FLIGHT_PER_SUBSCRIPTION, this.maxPerOrganization);
    this.pollMs = opts.pollMs ?? 1000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.stopping = new AbortController();
    this.loop = this.run();
  }

  /** Look now: an event was recorded (NOTIFY), a delivery ended, or a test wants it. */
  notify(): void {
    this.woken = true;
    this.wake?.();
  }

  /** The database is back (its LISTEN is established again): end a pause that failed rounds set, and look. */
  resume(): void {
    this.resumes++;
    this.endPause?.();
    this.notify();
  }

  /**
   * Claims nothing more, and lets the deliveries in flight finish for up to `graceMs`; those
   * still running then are cut off and their claims released, so that the next replica to look
   * sends them at once rather than after their lease.
   */
  async stop(graceMs = 0): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
    this.notify();
    await this.loop;
    if (!this.inFlight.size) return;
    const cutOff = setTimeout(() => this.stopping.abort(), graceMs);
    // After the cut-off, a release or settle still waiting on an unreachable database is not
    // waited for past a second more: closing the database ends it.
    let giveUp: NodeJS.Timeout | undefined;
    const patience = new Promise<void>((resolve) => (giveUp = setTimeout(resolve, graceMs + STOP_SETTLE_MS)));
    await Promise.race([Promise.all(this.inFlight), patience]);
    clearTimeout(cutOff);
    clearTimeout(giveUp);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      const free = this.maxInFlight - this.inFlight.size;
      let claimed = 0;
      if (free > 0) {
        const resumes = this.resumes;
        try {
          claimed = await this.claimAndSend(free);
          failures = 0;
        } catch (e) {
          this.opts.onError(e);
          // The database came back while this round was under way: try again rather than pause.
          failures = this.resumes === resumes ? failures + 1 : 0;
        }
      }
      if (!this.running) break;
      if (failures > 0) {
        // The database is away: asking every second would only push the driver's reconnect
        // backoff up, and with it the wait of every API call (docs/design.md, "Webhooks").
        // Wake-ups are ignored until the pause ends.
        await this.sleep(failurePauseMs(this.pollMs, failures), false);
        continue;
      }
      // A claim that found deliveries and left slots free may have stopped at subscriptions'
      // shares (the candidates it ranks can all be one backlog's): look again at once, without
      // the subscriptions now at their cap. A claim that found nothing ends the round.
      if (this.woken || (claimed > 0 && this.inFlight.size < this.maxInFlight)) {
        this.woken = false;
        continue;
      }
      // The next claim waits for a reason to expect a different answer: an event, deliveries
      // that end (free slots, a subscription under its share), a short retry coming due, or the
      // next poll.
      await this.sleep(this.pollMs, true);
    }
  }

  /** Waits `ms`, or until notify() when `wakeable` (stop() and resume() always end the wait). */
  private async sleep(ms: number, wakeable: boolean): Promise<void> {
    await new Promise<void>((resolve) => {
      this.wake = () => {
        if (wakeable || !this.running) resolve();
      };
      this.endPause = resolve;
      this.timer = setTimeout(resolve, ms);
    });
    clearTimeout(this.timer);
    this.wake = undefined;
    this.endPause = undefined;
    this.woken = false;
  }

  /** Claims up to `free` due deliveries and starts sending them; returns how many it claimed. */
  private async claimAndSend(free: number): Promise<number> {
    const claimed = await this.claim(free);
    for (const c of claimed) this.send(c);
    return claimed.length;
  }

  /**
   * Claims due deliveries, at most `limit`, from the longest due (the partial index's order, so a
   * backlog is not sorted whole): no more of one subscription, nor of one organization, than its
   * share of the in-flight caps leaves (what this replica already sends for it counts), taken in
   * turns — each organization's first, then each one's second, … — so that a free slot goes to
   * whoever holds fewest, not to the longest backlog.
   */
  async claim(limit: number): Promise<Claimed[]> {
    return queryRows<Claimed & Record<string, unknown>>(this.opts.db, this.claimStatement(limit));
  }

  /** The claim's statement (its test reads the plan). */
  claimStatement(limit: number): SQL {
    const now = this.opts.clock().toISOString();
    const leaseUntil = new Date(this.opts.clock().getTime() + this.leaseMs).toISOString();
    // What may be claimed; checked again where the rows are locked, on their newest versions, so
    // that a delivery another replica claimed meanwhile is not claimed twice.
    const due = (alias: string) => {
      const a = sql.raw(alias);
      return sql`${a}.state = 'pending' AND ${a}.next_attempt_time <= ${now}
        AND (${a}.lease_until IS NULL OR ${a}.lease_until < ${now})
        AND ${a}.event_seq = (
          SELECT p.event_seq FROM event_deliveries p
          WHERE p.state = 'pending' AND p.subscription_uid = ${a}.subscription_uid AND p.subject = ${a}.subject
          ORDER BY p.event_seq LIMIT 1)`;
    };
    // An organization is a uid's first segment (organizationOf).
    const organization = sql`split_part(q.subscription_uid, '/', 1)`;
    const subscriptions = this.shares(this.inFlightBySubscription, this.maxPerSubscription, sql`r.subscription_uid`);
    const organizations = this.shares(this.inFlightByOrganization, this.maxPerOrganization, sql`ranked.organization`);
    const skip = [
      ...(subscriptions.full.length ? [sql` AND q.subscription_uid NOT IN ${subscriptions.full}`] : []),
      ...(organizations.full.length ? [sql` AND ${organization} NOT IN ${organizations.full}`] : []),
    ];
    return sql`
      UPDATE event_deliveries d
      SET lease_until = ${leaseUntil}, attempts = d.attempts + 1
      FROM (
        SELECT c.id FROM (
          SELECT r.id, r.organization, r.next_attempt_time,
            row_number() OVER (PARTITION BY r.organization ORDER BY r.nth, r.next_attempt_time) AS turn
          FROM (
            SELECT q.id, q.subscription_uid, q.organization, q.next_attempt_time,
              row_number() OVER (PARTITION BY q.subscription_uid ORDER BY q.next_attempt_time) AS nth
            FROM (
              SELECT q.id, q.subscription_uid, ${organization} AS organization, q.next_attempt_time FROM event_deliveries q
              WHERE ${due("q")}${sql.join(skip, sql``)}
              ORDER BY q.next_attempt_time
              LIMIT ${CLAIM_CANDIDATES}
            ) q
          ) r
          WHERE r.nth <= ${subscriptions.share}
        ) ranked
        JOIN event_deliveries c ON c.id = ranked.id
        WHERE ranked.turn <= ${organizations.share} AND ${due("c")}
        ORDER BY ranked.turn, ranked.next_attempt_time
        LIMIT ${limit}
        FOR UPDATE OF c SKIP LOCKED
      ) picked, events e, subscriptions s
      WHERE d.id = picked.id AND e.uid = d.event_uid AND s.uid = d.subscription_uid
      RETURNING d.id, d.attempts, d.deadline, d.subscription_uid, s.sink, s.secret,
        s.state AS subscription_state, s.parent_uid AS subscription_group, s.creator_uid,
        e.uid, e.type, e.source, e.subject, e.actor, e.parent_uid, e.time, e.data`;
  }

  /** What is left of a cap for each key (`column`'s value) this replica already sends for, and the keys at it. */
  private shares(inFlight: Map<string, number>, cap: number, column: SQL): { share: SQL; full: string[] } {
    const busy = [...inFlight];
    const full = busy.filter(([, n]) => n >= cap).map(([key]) => key);
    const share = busy.length
      ? sql`CASE ${column} ${sql.join(
          busy.map(([key, n]) => sql`WHEN ${key} THEN ${Math.max(0, cap - n)}::int`),
          sql` `,
        )} ELSE ${cap}::int END`
      : sql`${cap}::int`;
    return { share, full };
  }

  /** Sends one claimed delivery in the background, counted in flight until it is settled. */
  private send(c: Claimed): void {
    const counts: [Map<string, number>, string][] = [
      [this.inFlightBySubscription, c.subscription_uid],
      [this.inFlightByOrganization, organizationOf(c.subscription_uid)],
    ];
    for (const [map, key] of counts) map.set(key, (map.get(key) ?? 0) + 1);
    const sending: Promise<void> = this.deliver(c)
      .catch((e: unknown) => this.opts.onError(e))
      .finally(() => {
        this.inFlight.delete(sending);
        for (const [map, key] of counts) {
          const left = (map.get(key) ?? 1) - 1;
          if (left > 0) map.set(key, left);
          else map.delete(key);
        }
        // With most slots taken, claim again once a subscription's share of them is free rather
        // than after every delivery: when deliveries fail fast, a claim each cost many times the
        // queries. (With fewer in flight than that, every delivery that ends wakes the loop.)
        if (this.running && this.maxInFlight - this.inFlight.size >= this.maxPerSubscription) this.notify();
      });
    this.inFlight.add(sending);
  }

  private async deliver(c: Claimed): Promise<void> {
    // Checked here, not only when grants change: what a creator may no longer read is never sent.
    const refusal =
      c.subscription_state === "active" ? await creatorRefusal(this.opts.grantsOf, c.creator_uid, c.subscription_group) : STOPPED;
    if (refusal) {
      await this.refuse(c, refusal);
      return;
    }
    let error: string | undefined;
    try {
      const body = JSON.stringify(cloudEvent(c));
      const secret = this.opts.secrets.open(c.secret, subscriptionSecretContext(c.subscription_uid));
      const sentAt = this.opts.clock();
      const signature = new Webhook(secret).sign(c.uid, sentAt, body);
      const res = await this.opts.fetch(c.sink, {
        method: "POST",
        headers: {
          "content-type": "application/cloudevents+json",
          "webhook-id": c.uid,
          "webhook-timestamp": String(Math.floor(sentAt.getTime() / 1000)),
          "webhook-signature": signature,
        },
        body,
        signal: this.stopping.signal,
      });
      if (res.status < 200 || res.status > 299) error = `the sink answered ${res.status}`;
    } catch (e) {
      if (this.stopping.signal.aborted) {
        await this.release(c);
        return;
      }
      // What subscription readers see: the kind of failure only. The egress guard's own text can
      // name internal hosts and addresses, so it goes to the log.
      error = e instanceof EgressError ? DELIVERY_FAILURES[e.failure] : "the delivery failed";
      this.opts.onDeliveryError(c.sink, e);
    }
    await this.settle(c, error);
  }

  /**
   * Does not send a claimed delivery: stops its subscription, which fails its pending deliveries,
   * this one with them. One that someone else vouches for by now (an update re-homed it) is given
   * back instead, for the next claim to check its new creator.
   */
  private async refuse(c: Claimed, reason: string): Promise<void> {
    const db = this.opts.db;
    const sameCreator = c.creator_uid === null ? sql`creator_uid IS NULL` : sql`creator_uid = ${c.creator_uid}`;
    await stopSubscriptions(db, sql`uid = ${c.subscription_uid} AND ${sameCreator}`, reason, this.opts.clock());
    // A claim taken before the stop was committed is still pending: failed like the others.
    const failed = await queryRows(
      db,
      sql`
      UPDATE event_deliveries d SET state = 'failed', lease_until = NULL, last_error = s.last_error
      FROM subscriptions s
      WHERE d.id = ${c.id} AND d.state = 'pending' AND d.attempts = ${c.attempts}
        AND s.uid = d.subscription_uid AND s.state = 'stopped'
      RETURNING d.id`,
    );
    if (!failed.length) await this.release(c);
  }

  /** Gives a claim back, unsent (shutting down): due at once for whichever replica looks next. */
  private async release(c: Claimed): Promise<void> {
    await this.opts.db.execute(sql`
      UPDATE event_deliveries SET lease_until = NULL
      WHERE id = ${c.id} AND state = 'pending' AND attempts = ${c.attempts}`);
  }
  /**
   * Marks a delivery delivered, failed (past its deadline), or due again after a backoff —
   * only while this claim is the latest (`attempts` unchanged): a replica whose lease ran out
   * and was taken over does not settle what the other now holds.
   */
  private async settle(c: Claimed, error: string | undefined): Promise<void> {
    const now = this.opts.clock();
    const db = this.opts.db;
    // The delivery row first, the subscription's status after, as separate statements: deleting a
    // subscription locks the subscription and then (by cascade) its deliveries, and taking the two
    // in the other order within one statement deadlocks with it.
    const mine = sql`id = ${c.id} AND state = 'pending' AND attempts = ${c.attempts}`;
    const subscriptionStatus = (set: ReturnType<typeof sql>) =>
      db.execute(sql`UPDATE subscriptions SET ${set} WHERE uid = ${c.subscription_uid}`);
    if (error === undefined) {
      const done = await queryRows(
        db,
        sql`
        UPDATE event_deliveries SET state = 'delivered', deliver_time = ${now.toISOString()}, lease_until = NULL, last_error = ''
        WHERE ${mine} RETURNING id`,
      );
      if (done.length) await subscriptionStatus(sql`last_delivery_time = ${now.toISOString()}`);
      return;
    }
    const delay = Math.min(this.opts.backoffMs * 2 ** Math.max(0, c.attempts - 1), MAX_BACKOFF_MS);
    const next = new Date(now.getTime() + delay);
    const failed = next.getTime() > new Date(c.deadline).getTime();
    const text = error.slice(0, 1000);
    const settled = await queryRows(
      db,
      sql`
      UPDATE event_deliveries SET state = ${failed ? "failed" : "pending"}, next_attempt_time = ${next.toISOString()},
        lease_until = NULL, last_error = ${text}
      WHERE ${mine} RETURNING id`,
    );
    if (settled.length) await subscriptionStatus(sql`last_error = ${text}, last_error_time = ${now.toISOString()}`);
    if (!failed && this.running && delay < this.pollMs) {
      const t = setTimeout(() => {
        this.retries.delete(t);
        this.notify();
      }, delay);
      this.retries.add(t);
    }
  }
}
