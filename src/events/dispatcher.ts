import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import type { SecretBox } from "../crypto/index.js";
import { queryRows, type Database } from "../db/index.js";
import { EgressError, type EgressFetch } from "../egress/index.js";
import { cloudEvent, type EventRow } from "./cloud-event.js";

/** What a subscription's sealed secret is bound to: its own row. */
export function subscriptionSecretContext(uid: string): string {
  return `subscriptions.secret:${uid}`;
}

export interface DispatcherOptions {
  db: Database;
  /** The egress guard's fetch: deliveries reach public addresses only (loopback in development). */
  fetch: EgressFetch;
  secrets: SecretBox;
  clock: () => Date;
  /** The first retry's delay; each next one doubles it, up to an hour. */
  backoffMs: number;
  /** How long a claimed delivery is this replica's; after that another may take it over. */
  leaseMs?: number;
  /** Deliveries claimed per round (and sent at once). */
  batch?: number;
  /** How often due retries are looked for when no event wakes the dispatcher. */
  pollMs?: number;
  onError: (e: unknown) => void;
  /** A delivery's failure in full, for the log (subscriptions show only its kind). */
  onDeliveryError: (sink: string, e: unknown) => void;
}

const MAX_BACKOFF_MS = 3_600_000;
/** The longest pause after failed rounds (the database unreachable). */
const MAX_FAILURE_PAUSE_MS = 30_000;

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
}

/**
 * Sends pending webhook deliveries (docs/design.md, "Events"). Any number of
 * replicas run one each: a delivery is claimed with FOR UPDATE SKIP LOCKED and
 * a lease, so two replicas never hold it at once; a replica that dies mid-way
 * leaves a lease that runs out, and the delivery is sent again. A delivery
 * waits while an earlier event about the same subject is still pending for
 * its subscription, so each receiver sees a subject's events in order.
 */
export class WebhookDispatcher {
  private readonly leaseMs: number;
  private readonly batch: number;
  private readonly pollMs: number;
  private running = false;
  private woken = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Wake-ups for this replica's own retries, so that a short backoff is not stretched to the poll interval. */
  private readonly retries = new Set<NodeJS.Timeout>();

  constructor(private readonly opts: DispatcherOptions) {
    this.leaseMs = opts.leaseMs ?? 30_000;
    this.batch = opts.batch ?? 16;
    this.pollMs = opts.pollMs ?? 1000;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Look now: an event was recorded (NOTIFY), or a test wants it. */
  notify(): void {
    this.woken = true;
    this.wake?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    for (const t of this.retries) clearTimeout(t);
    this.retries.clear();
    this.notify();
    await this.loop;
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let sent = 0;
      try {
        sent = await this.round();
        failures = 0;
      } catch (e) {
        failures++;
        this.opts.onError(e);
      }
      if (!this.running) break;
      if (failures > 0) {
        // The database is away: asking every second would only push the driver's reconnect
        // backoff up, and with it the wait of every API call (docs/design.md, "Webhooks").
        // Wake-ups are ignored until the pause ends.
        await this.sleep(Math.min(this.pollMs * 2 ** failures, MAX_FAILURE_PAUSE_MS), false);
        continue;
      }
      // A full batch: there may be more. Otherwise sleep until woken or the next poll.
      if (sent >= this.batch) continue;
      if (this.woken) {
        this.woken = false;
        continue;
      }
      await this.sleep(this.pollMs, true);
    }
  }

  /** Waits `ms`, or until notify() when `wakeable` (stop() always ends the wait). */
  private async sleep(ms: number, wakeable: boolean): Promise<void> {
    await new Promise<void>((resolve) => {
      this.wake = () => {
        if (wakeable || !this.running) resolve();
      };
      this.timer = setTimeout(resolve, ms);
    });
    clearTimeout(this.timer);
    this.wake = undefined;
    this.woken = false;
  }

  /** Claims a batch of due deliveries and sends them; returns how many it claimed. */
  async round(): Promise<number> {
    const now = this.opts.clock();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const claimed = await queryRows<Claimed & Record<string, unknown>>(
      this.opts.db,
      sql`
      UPDATE event_deliveries d
      SET lease_until = ${leaseUntil.toISOString()}, attempts = d.attempts + 1
      FROM (
        SELECT c.id FROM event_deliveries c
        WHERE c.state = 'pending' AND c.next_attempt_time <= ${now.toISOString()}
          AND (c.lease_until IS NULL OR c.lease_until < ${now.toISOString()})
          AND NOT EXISTS (
            SELECT 1 FROM event_deliveries p
            WHERE p.state = 'pending' AND p.subscription_uid = c.subscription_uid
              AND p.subject = c.subject AND p.event_seq < c.event_seq)
        ORDER BY c.event_seq
        LIMIT ${this.batch}
        FOR UPDATE SKIP LOCKED
      ) picked, events e, subscriptions s
      WHERE d.id = picked.id AND e.uid = d.event_uid AND s.uid = d.subscription_uid
      RETURNING d.id, d.attempts, d.deadline, d.subscription_uid, s.sink, s.secret,
        e.uid, e.type, e.source, e.subject, e.actor, e.parent_uid, e.time, e.data`,
    );
    await Promise.all(claimed.map((c) => this.deliver(c)));
    return claimed.length;
  }

  private async deliver(c: Claimed): Promise<void> {
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
      });
      if (res.status < 200 || res.status > 299) error = `the sink answered ${res.status}`;
    } catch (e) {
      // What subscription readers see: the kind of failure only. The egress guard's own text can
      // name internal hosts and addresses, so it goes to the log.
      error = e instanceof EgressError ? DELIVERY_FAILURES[e.failure] : "the delivery failed";
      this.opts.onDeliveryError(c.sink, e);
    }
    await this.settle(c, error);
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
      const done = await queryRows(db, sql`
        UPDATE event_deliveries SET state = 'delivered', deliver_time = ${now.toISOString()}, lease_until = NULL, last_error = ''
        WHERE ${mine} RETURNING id`);
      if (done.length) await subscriptionStatus(sql`last_delivery_time = ${now.toISOString()}`);
      return;
    }
    const delay = Math.min(this.opts.backoffMs * 2 ** Math.max(0, c.attempts - 1), MAX_BACKOFF_MS);
    const next = new Date(now.getTime() + delay);
    const failed = next.getTime() > new Date(c.deadline).getTime();
    const text = error.slice(0, 1000);
    const settled = await queryRows(db, sql`
      UPDATE event_deliveries SET state = ${failed ? "failed" : "pending"}, next_attempt_time = ${next.toISOString()},
        lease_until = NULL, last_error = ${text}
      WHERE ${mine} RETURNING id`);
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
