import { index, pgTable, primaryKey, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { identities } from "./identities.js";
import { roles } from "./roles.js";

/**
 * Roles granted at the root, above every organization: the bootstrap
 * identity's `owner`, platform administrators (PLATFORM_ADMINS) and whatever
 * a root capability holder binds through RootRoleBindingsService. An
 * identity holds a role there at most once (the primary key).
 */
export const rootRoleBindings = pgTable(
  "root_role_bindings",
  {
    /** 16 hex characters: the binding's name in the API. */
    uid: textC("uid").notNull(),
    identityUid: textC("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    roleUid: textC("role_uid")
      .notNull()
      .references(() => roles.uid),
    createTime: timestampMs("create_time").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.identityUid, t.roleUid] }),
    uniqueIndex("root_role_bindings_uid_key").on(t.uid),
    index("root_role_bindings_role_uid_idx").on(t.roleUid, t.uid),
    index("root_role_bindings_create_time_idx").on(t.createTime, t.uid),
  ],
);
