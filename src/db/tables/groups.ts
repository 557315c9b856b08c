import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, text, uniqueIndex, type AnyPgColumn } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";

export const groups = pgTable(
  "groups",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid").references((): AnyPgColumn => groups.uid),
    name: textC("name").notNull(),
    description: text("description").notNull().default(""),
    resourceLimits: jsonb("resource_limits").$type<Record<string, number>>().notNull().default({}),
    verified: boolean("verified").notNull().default(false),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("groups_parent_uid_idx").on(t.parentUid, t.uid),
    index("groups_name_idx").on(t.name, t.uid),
    index("groups_create_time_idx").on(t.createTime, t.uid),
    index("groups_update_time_idx").on(t.updateTime, t.uid),
    // Siblings have distinct names; root groups (organizations) need not.
    uniqueIndex("groups_parent_name_key").on(t.parentUid, t.name).where(sql`${t.parentUid} IS NOT NULL`),
  ],
);
