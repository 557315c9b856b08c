import { index, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";

/** Container repositories; each lives in a group and is named uniquely there. */
export const repos = pgTable(
  "repos",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => groups.uid),
    name: textC("name").notNull(),
    description: text("description").notNull().default(""),
    aliases: text("aliases").array().notNull().default([]),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("repos_parent_uid_idx").on(t.parentUid, t.uid),
    index("repos_name_idx").on(t.name, t.uid),
    index("repos_create_time_idx").on(t.createTime, t.uid),
    index("repos_update_time_idx").on(t.updateTime, t.uid),
    uniqueIndex("repos_parent_name_key").on(t.parentUid, t.name),
  ],
);
