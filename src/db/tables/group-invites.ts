import { boolean, index, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";
import { roles } from "./roles.js";

/**
 * Invitations into a group. Only the SHA-256 of an invite's code is kept
 * (hex); the code itself is returned once, by the create.
 */
export const groupInvites = pgTable(
  "group_invites",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => groups.uid),
    roleUid: textC("role_uid")
      .notNull()
      .references(() => roles.uid),
    email: text("email").notNull().default(""),
    singleUse: boolean("single_use").notNull().default(false),
    codeHash: text("code_hash").notNull(),
    expirationTime: timestampMs("expiration_time").notNull(),
    redeemTime: timestampMs("redeem_time"),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("group_invites_parent_uid_idx").on(t.parentUid, t.uid),
    index("group_invites_role_uid_idx").on(t.roleUid),
    index("group_invites_create_time_idx").on(t.createTime, t.uid),
    index("group_invites_update_time_idx").on(t.updateTime, t.uid),
    uniqueIndex("group_invites_code_hash_key").on(t.codeHash),
  ],
);
