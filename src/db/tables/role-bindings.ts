import { index, pgTable, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";
import { identities } from "./identities.js";
import { roles } from "./roles.js";

/**
 * A role granted to an identity at a group (and everything below it).
 * Deleting the identity deletes its bindings in the same statement; a bound
 * role cannot be deleted. A group's bindings go with the group: the key to
 * groups does not cascade, src/bindings/removal.ts deletes them (each
 * recorded as deleted) in the group's delete.
 */
export const roleBindings = pgTable(
  "role_bindings",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => groups.uid),
    identityUid: textC("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    roleUid: textC("role_uid")
      .notNull()
      .references(() => roles.uid),
    createTime: timestampMs("create_time").notNull(),
  },
  (t) => [
    index("role_bindings_parent_uid_idx").on(t.parentUid, t.uid),
    index("role_bindings_identity_uid_idx").on(t.identityUid, t.uid),
    index("role_bindings_role_uid_idx").on(t.roleUid, t.uid),
    index("role_bindings_create_time_idx").on(t.createTime, t.uid),
    uniqueIndex("role_bindings_parent_identity_role_key").on(t.parentUid, t.identityUid, t.roleUid),
  ],
);
