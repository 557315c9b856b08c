import { sql } from "drizzle-orm";
import { index, jsonb, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";

/**
 * Roles: built-in ones are global (no parent, uid = name, written from the
 * catalogue when the database is opened: docs/design.md, "Built-in roles");
 * custom ones live in a group but keep a single-segment uid, so
 * `path` (`<parent>/<uid>`) is what scope filters match.
 */
export const roles = pgTable(
  "roles",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid").references(() => groups.uid),
    path: textC("path").notNull(),
    name: textC("name").notNull(),
    description: text("description").notNull().default(""),
    capabilities: jsonb("capabilities").$type<string[]>().notNull().default([]),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("roles_parent_uid_idx").on(t.parentUid, t.uid),
    index("roles_path_idx").on(t.path),
    index("roles_name_idx").on(t.name, t.uid),
    index("roles_create_time_idx").on(t.createTime, t.uid),
    index("roles_update_time_idx").on(t.updateTime, t.uid),
    uniqueIndex("roles_parent_name_key").on(t.parentUid, t.name).where(sql`${t.parentUid} IS NOT NULL`),
    uniqueIndex("roles_builtin_name_key").on(t.name).where(sql`${t.parentUid} IS NULL`),
  ],
);
