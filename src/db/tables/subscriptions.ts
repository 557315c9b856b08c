import { index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";

/**
 * Webhook subscriptions of a group. The signing secret is stored sealed
 * under the master key and returned once, by the create.
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
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("subscriptions_parent_uid_idx").on(t.parentUid, t.uid),
    index("subscriptions_create_time_idx").on(t.createTime, t.uid),
    index("subscriptions_update_time_idx").on(t.updateTime, t.uid),
  ],
);
