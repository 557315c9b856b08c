import { pgTable, primaryKey } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { identities } from "./identities.js";
import { roles } from "./roles.js";

/**
 * Roles granted at the root, above every organization: the bootstrap
 * identity's `owner`. Not exposed through the API; role_bindings stay
 * bindings inside groups.
 */
export const rootRoleBindings = pgTable(
  "root_role_bindings",
  {
    identityUid: textC("identity_uid")
      .notNull()
      .references(() => identities.uid, { onDelete: "cascade" }),
    roleUid: textC("role_uid")
      .notNull()
      .references(() => roles.uid),
    createTime: timestampMs("create_time").notNull(),
  },
  (t) => [primaryKey({ columns: [t.identityUid, t.roleUid] })],
);
