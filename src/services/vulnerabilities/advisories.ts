import { create } from "@bufbuild/protobuf";
import { arrayContains, eq, getTableColumns, inArray, isNull, sql, type SQL } from "drizzle-orm";
import {
  AdvisoriesService,
  AdvisorySchema,
  ImportAdvisoriesResponse_Outcome as Outcome,
  ImportAdvisoriesResponseSchema,
  ImportAdvisoriesResponse_ResultSchema as ResultSchema,
  type ListAdvisoriesRequest,
} from "../../../gen/platform/vulnerabilities/v2beta1/advisories_pb.js";
import { schema, type Executor } from "../../db/index.js";
import type { ExtraFilters } from "../../list/index.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { parseTime, readOsvDocuments, type OsvAdvisory } from "./osv-document.js";

const { advisories } = schema;

const optionalTime = (text: string | null) => (text ? parseTime(text) : undefined);

// Global: no parentUid, so the scope filters (other than ids) are refused.
export const advisoryResource = defineResource({
  kind: "advisory",
  table: advisories,
  schema: AdvisorySchema,
  list: {
    name: advisories.advisoryId,
    sortable: { name: advisories.advisoryId, create_time: advisories.createTime, update_time: advisories.updateTime },
  },
  listFilters: advisoryFilters,
  toMessage: (row) =>
    create(AdvisorySchema, {
      uid: row.uid,
      advisoryId: row.advisoryId,
      aliases: row.aliases,
      artifactName: row.artifactName,
      artifactType: row.artifactType,
      componentName: row.componentName,
      componentType: row.componentType,
      severities: row.severities,
      events: row.events.map((e) => ({ ...e, createTime: parseTime(e.createTime) })),
      summary: row.summary,
      details: row.details,
      published: optionalTime(row.published),
      modified: parseTime(row.modified),
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
      deleteTime: optionalTime(row.withdrawn),
    }),
  // Advisories are written only by the import, which validates documents itself.
  validate: () => {},
  toColumns: () => ({}),
});

function advisoryFilters(req: ListAdvisoriesRequest): ExtraFilters {
  const where: SQL[] = [];
  if (req.advisoryId) where.push(eq(advisories.advisoryId, req.advisoryId));
  if (req.alias) where.push(arrayContains(advisories.aliases, [req.alias]));
  if (req.artifactName) where.push(eq(advisories.artifactName, req.artifactName));
  if (req.componentName) where.push(eq(advisories.componentName, req.componentName));
  if (!req.showDeleted) where.push(isNull(advisories.withdrawn));
  const { advisoryId, alias, artifactName, componentName, showDeleted } = req;
  return { where, key: { advisoryId, alias, artifactName, componentName, showDeleted } };
}

function outcomeOf(stored: string | undefined, modified: string): Outcome {
  if (stored === undefined) return Outcome.CREATED;
  if (modified > stored) return Outcome.UPDATED;
  return modified === stored ? Outcome.UNCHANGED : Outcome.SKIPPED_OLDER;
}

// Every column a newer document replaces: all but the key and create_time.
const { uid: _uid, createTime: _createTime, ...replaced } = getTableColumns(advisories);
const replaceFromExcluded = Object.fromEntries(
  Object.entries(replaced).map(([key, col]) => [key, sql.raw(`excluded.${JSON.stringify(col.name)}`)]),
);

/**
 * Writes the advisories of one import in a single statement. The `modified`
 * guard makes a concurrent import of the same documents converge on the
 * newest one instead of overwriting it.
 */
async function upsert(db: Executor, rows: OsvAdvisory[], now: Date): Promise<void> {
  if (!rows.length) return;
  await db
    .insert(advisories)
    .values(rows.map((r) => ({ ...r, createTime: now, updateTime: now })))
    .onConflictDoUpdate({
      target: advisories.uid,
      set: replaceFromExcluded,
      setWhere: sql`${advisories.modified} < excluded.modified`,
    });
}

export const advisoriesService = resourceService(AdvisoriesService, advisoryResource, (_store, ctx) => ({
  async importAdvisories(req, context) {
    const documents = readOsvDocuments(req.documents);
    return ctx.db.transaction(async (tx) => {
      const current = await tx
        .select({ uid: advisories.uid, modified: advisories.modified })
        .from(advisories)
        .where(inArray(advisories.uid, [...new Set(documents.map((d) => d.uid))]))
        .for("update");
      const stored = new Map(current.map((r) => [r.uid, r.modified]));
      // Later documents in the same call compare against earlier ones.
      const writes = new Map<string, OsvAdvisory>();
      const results = documents.map((doc, index) => {
        const outcome = outcomeOf(stored.get(doc.uid), doc.modified);
        if (outcome === Outcome.CREATED || outcome === Outcome.UPDATED) {
          stored.set(doc.uid, doc.modified);
          writes.set(doc.uid, doc);
        }
        return create(ResultSchema, { index, advisoryId: doc.advisoryId, uid: doc.uid, outcome });
      });
      await upsert(tx, [...writes.values()], ctx.clock());
      // One event per advisory written; advisories are global, so only platform administrators see them.
      for (const result of results) {
        if (result.outcome !== Outcome.CREATED && result.outcome !== Outcome.UPDATED) continue;
        const data = {
          advisoryId: result.advisoryId,
          outcome: result.outcome === Outcome.CREATED ? "created" : "updated",
          modified: writes.get(result.uid)!.modified,
        };
        await ctx.events.call(tx, context, { subject: result.uid, group: null, data });
      }
      return create(ImportAdvisoriesResponseSchema, { results });
    });
  },
}));
