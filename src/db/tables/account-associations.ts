import { sql } from "drizzle-orm";
import { check, index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import type { JsonObject } from "@bufbuild/protobuf";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";

/**
 * One row per group at most: uid = parent_uid = the group's uid. Each
 * provider (amazon, google, azure, github) is its sub-message in protojson,
 * or null when unset. The uid is not a path below the group, so `path`
 * (`<group uid>/account-association`) is what descendants_of and in_root
 * match, as they do for every other resource the group holds.
 */
export const accountAssociations = pgTable(
  "account_associations",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => groups.uid),
    path: textC("path").notNull(),
    name: textC("name").notNull().default(""),
    description: text("description").notNull().default(""),
    amazon: jsonb("amazon").$type<JsonObject>(),
    google: jsonb("google").$type<JsonObject>(),
    azure: jsonb("azure").$type<JsonObject>(),
    github: jsonb("github").$type<JsonObject>(),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    check("account_associations_uid_is_group", sql`${t.uid} = ${t.parentUid}`),
    index("account_associations_parent_uid_idx").on(t.parentUid, t.uid),
    index("account_associations_path_idx").on(t.path),
    index("account_associations_name_idx").on(t.name, t.uid),
    index("account_associations_create_time_idx").on(t.createTime, t.uid),
    index("account_associations_update_time_idx").on(t.updateTime, t.uid),
  ],
);
