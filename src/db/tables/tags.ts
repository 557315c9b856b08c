import { boolean, index, pgTable, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { repos } from "./repos.js";

/** Tags of a repo; the parent is the repo, so a group holding a repo is never empty. */
export const tags = pgTable(
  "tags",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => repos.uid),
    name: textC("name").notNull(),
    digest: textC("digest").notNull(),
    deprecated: boolean("deprecated").notNull().default(false),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
    /**
     * The registry event time that last set `digest` (docs/design.md, "The image registry"): a
     * notification older than it changes nothing. API writes leave it as it is; null for
     * tags the registry never wrote.
     */
    sourceTime: timestampMs("source_time"),
  },
  (t) => [
    index("tags_parent_uid_idx").on(t.parentUid, t.uid),
    index("tags_name_idx").on(t.name, t.uid),
    index("tags_digest_idx").on(t.digest, t.uid),
    index("tags_create_time_idx").on(t.createTime, t.uid),
    index("tags_update_time_idx").on(t.updateTime, t.uid),
    uniqueIndex("tags_parent_name_key").on(t.parentUid, t.name),
  ],
);
