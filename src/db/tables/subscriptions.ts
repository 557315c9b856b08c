import { index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";

/**
 * Webhook subscriptions of a group. The signing secret is stored sealed
 * under the master key and returned once, by the create. A subscription sends
 * on its creator's behalf (docs/design.md, "Webhooks"): it is stopped when
 * the creator can no longer list events in its group.
 */
export const subscriptions = pgTable(
  "subscriptions",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => groups.uid),
    sink: text("sink").notNull(),
    types: jsonb("types").$type<string[]>().notNull().default([]),
    description: text("description").notNull().default(""),
    secret: text("secret").notNull(),
    lastError: text("last_error").notNull().default(""),
    lastErrorTime: timestampMs("last_error_time"),
    lastDeliveryTime: timestampMs("last_delivery_time"),
    /** active, or stopped (its creator lost events.list there, or was deleted: last_error says which). */
    state: text("state").notNull().default("active"),
    /** The identity it sends for: its creator, or whoever updated it last. Null: made before creators were recorded. */
    creatorUid: textC("creator_uid"),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("subscriptions_parent_uid_idx").on(t.parentUid, t.uid),
    index("subscriptions_create_time_idx").on(t.createTime, t.uid),
    index("subscriptions_update_time_idx").on(t.updateTime, t.uid),
    // An identity's delete stops what it created, in its transaction.
    index("subscriptions_creator_uid_idx").on(t.creatorUid),
  ],
);
