import { index, jsonb, pgTable, text, uniqueIndex } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";
import { roles } from "./roles.js";

/**
 * Upstream OIDC providers of a group. The client secret is stored sealed
 * under the master key for its row (db/client-secrets.ts)
 * and never leaves the service through the API.
 */
export const identityProviders = pgTable(
  "identity_providers",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid")
      .notNull()
      .references(() => groups.uid),
    name: textC("name").notNull(),
    description: text("description").notNull().default(""),
    defaultRoleUid: textC("default_role_uid").references(() => roles.uid),
    oidcIssuer: text("oidc_issuer").notNull(),
    oidcClientId: text("oidc_client_id").notNull(),
    oidcClientSecret: text("oidc_client_secret").notNull().default(""),
    oidcAdditionalScopes: jsonb("oidc_additional_scopes").$type<string[]>().notNull().default([]),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("identity_providers_parent_uid_idx").on(t.parentUid, t.uid),
    index("identity_providers_name_idx").on(t.name, t.uid),
    index("identity_providers_create_time_idx").on(t.createTime, t.uid),
    index("identity_providers_update_time_idx").on(t.updateTime, t.uid),
    // A role delete checks its references through this index.
    index("identity_providers_default_role_uid_idx").on(t.defaultRoleUid),
    uniqueIndex("identity_providers_parent_name_key").on(t.parentUid, t.name),
  ],
);
