import { sql } from "drizzle-orm";
import { boolean, index, jsonb, pgTable, text, uniqueIndex, type AnyPgColumn } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "./columns.js";

/** Server-wide secrets and settings shared by every replica (e.g. the page-token HMAC key). */
export const settings = pgTable("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/** ES256 keys that sign API tokens; public halves are published at /.well-known/jwks.json. */
export const signingKeys = pgTable("signing_keys", {
  kid: text("kid").primaryKey(),
  privateJwk: jsonb("private_jwk").notNull(),
  publicJwk: jsonb("public_jwk").notNull(),
  createTime: timestampMs("create_time").notNull(),
});

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

/**
 * Identities live in a group; the bootstrap identity has no parent. A caller
 * assumes an identity with an OIDC token whose claims match claim_*.
 */
export const identities = pgTable(
  "identities",
  {
    uid: textC("uid").primaryKey(),
    parentUid: textC("parent_uid").references(() => groups.uid),
    name: textC("name").notNull(),
    description: text("description").notNull().default(""),
    claimIssuer: text("claim_issuer").notNull().default(""),
    claimSubject: text("claim_subject").notNull().default(""),
    claimIssuerPattern: text("claim_issuer_pattern").notNull().default(""),
    claimSubjectPattern: text("claim_subject_pattern").notNull().default(""),
    claimAudience: text("claim_audience").notNull().default(""),
    lastSeenTime: timestampMs("last_seen_time"),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("identities_parent_uid_idx").on(t.parentUid, t.uid),
    index("identities_name_idx").on(t.name, t.uid),
    index("identities_create_time_idx").on(t.createTime, t.uid),
    index("identities_update_time_idx").on(t.updateTime, t.uid),
  ],
);
