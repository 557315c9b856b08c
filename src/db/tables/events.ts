import { sql } from "drizzle-orm";
import { bigint, bigserial, index, integer, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { subscriptions } from "./subscriptions.js";

/**
 * The audit log and outbox (docs/design.md, "Events"): one row per change,
 * inserted in the transaction of the change. No foreign keys: an event
 * outlives the resource and the group it describes. `seq` is the order of
 * insertion, which live watchers follow through NOTIFY.
 */
export const events = pgTable(
  "events",
  {
    uid: textC("uid").primaryKey(),
    seq: bigserial("seq", { mode: "number" }).notNull().unique(),
    type: textC("type").notNull(),
    source: text("source").notNull(),
    subject: textC("subject").notNull(),
    actor: textC("actor").notNull().default(""),
    /** The group the event belongs to (visibility and scope filters); null for global resources. */
    parentUid: textC("parent_uid"),
    time: timestampMs("time").notNull(),
    data: jsonb("data").$type<Record<string, unknown>>().notNull(),
  },
  (t) => [
    index("events_parent_uid_idx").on(t.parentUid, t.uid),
    index("events_time_idx").on(t.time, t.uid),
    index("events_type_idx").on(t.type, t.uid),
    index("events_subject_idx").on(t.subject, t.uid),
    index("events_actor_idx").on(t.actor, t.uid),
  ],
);

/**
 * One event to send to one subscription: written with the event (so none is
 * lost), claimed by one replica at a time with a lease (so none is sent twice
 * while the lease holds), retried with backoff until `deadline`.
 */
export const eventDeliveries = pgTable(
  "event_deliveries",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    subscriptionUid: textC("subscription_uid")
      .notNull()
      .references(() => subscriptions.uid, { onDelete: "cascade" }),
    eventUid: textC("event_uid").notNull(),
    eventSeq: bigint("event_seq", { mode: "number" }).notNull(),
    subject: textC("subject").notNull(),
    /** pending, delivered or failed. */
    state: text("state").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptTime: timestampMs("next_attempt_time").notNull(),
    /** Until when a replica holds the delivery; a dead replica's lease runs out and another resumes. */
    leaseUntil: timestampMs("lease_until"),
    deadline: timestampMs("deadline").notNull(),
    lastError: text("last_error").notNull().default(""),
    deliverTime: timestampMs("deliver_time"),
  },
  (t) => [
    index("event_deliveries_due_idx").on(t.nextAttemptTime).where(sql`state = 'pending'`),
    // One index for a subscription's counts (by state) and for the claim's order check (an earlier
    // pending event about the same subject): as two, a fresh table's planner took the counts index
    // for the check and read every pending row of the subscription per candidate.
    index("event_deliveries_subscription_state_idx").on(t.subscriptionUid, t.state, t.subject, t.eventSeq),
    index("event_deliveries_event_idx").on(t.eventUid),
  ],
);
