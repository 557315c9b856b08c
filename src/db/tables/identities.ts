import { index, pgTable, text } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";
import { groups } from "./groups.js";

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
    claimAudiencePattern: text("claim_audience_pattern").notNull().default(""),
    lastSeenTime: timestampMs("last_seen_time"),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    index("identities_parent_uid_idx").on(t.parentUid, t.uid),
    index("identities_name_idx").on(t.name, t.uid),
    index("identities_create_time_idx").on(t.createTime, t.uid),
    index("identities_update_time_idx").on(t.updateTime, t.uid),
    // Serves the claim_match.issuer / claim_match.subject list filters.
    index("identities_claim_idx").on(t.claimIssuer, t.claimSubject, t.uid),
  ],
);
