import { index, jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { textC, timestampMs } from "../columns.js";

export interface SeverityColumn {
  type: string;
  score: string;
}

export interface AdvisoryEventColumn {
  type: string;
  /** RFC 3339, as the API renders it. */
  createTime: string;
  author: string;
  fixedVersion: string;
}

/**
 * Vulnerability advisories (global: no parent), imported from OSV documents.
 * OSV timestamps may carry nanoseconds, so `published`, `modified` and
 * `withdrawn` keep the document's precision as fixed-width UTC text
 * (`YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`), which sorts chronologically.
 */
export const advisories = pgTable(
  "advisories",
  {
    uid: textC("uid").primaryKey(),
    advisoryId: textC("advisory_id").notNull(),
    aliases: text("aliases").array().notNull().default([]),
    artifactName: textC("artifact_name").notNull().default(""),
    artifactType: text("artifact_type").notNull().default(""),
    componentName: textC("component_name").notNull().default(""),
    componentType: text("component_type").notNull().default(""),
    severities: jsonb("severities").$type<SeverityColumn[]>().notNull().default([]),
    events: jsonb("events").$type<AdvisoryEventColumn[]>().notNull().default([]),
    summary: text("summary").notNull().default(""),
    details: text("details").notNull().default(""),
    published: textC("published"),
    modified: textC("modified").notNull(),
    withdrawn: textC("withdrawn"),
    createTime: timestampMs("create_time").notNull(),
    updateTime: timestampMs("update_time").notNull(),
  },
  (t) => [
    // The uid is a function of advisory_id, so the primary key keeps ids unique.
    index("advisories_advisory_id_idx").on(t.advisoryId, t.uid),
    // `alias=` is `aliases @> ARRAY[$1]`, which a GIN index serves.
    index("advisories_aliases_idx").using("gin", t.aliases),
    index("advisories_artifact_name_idx").on(t.artifactName, t.uid),
    index("advisories_component_name_idx").on(t.componentName, t.uid),
    index("advisories_create_time_idx").on(t.createTime, t.uid),
    index("advisories_update_time_idx").on(t.updateTime, t.uid),
  ],
);
