import { InvalidArgumentError, type Command } from "commander";
import progress from "cli-progress";
import type { ApiClient, JsonObject } from "../api-client.js";
import { contextOf, type CommandContext } from "../context.js";
import type { CliIo } from "../io.js";
import { ApiError, CliError, detailsOfType, EXIT, statusLine, type RestStatus, type Violation } from "../errors.js";
import { col } from "../output.js";
import { batches, readOsvFiles, sourceOf, type OsvDocument } from "../osv-files.js";
import { addResourceCommands, type ResourceSpec } from "./resource.js";

const advisories: ResourceSpec = {
  command: "advisories",
  kind: "advisory",
  path: "/vulnerabilities/v2beta1/advisories",
  listKey: "advisories",
  columns: [
    col("UID", "uid", "text", true),
    col("ALIASES", "aliases"),
    col("COMPONENT", "componentName"),
    col("TYPE", "componentType"),
    col("MODIFIED", "modified", "time"),
    col("SUMMARY", "summary"),
  ],
  list: {
    scopes: "ids",
    name: true,
    filters: [
      { flag: "advisory-id", param: "advisory_id", description: "the OSV id", arg: "<id>" },
      { flag: "alias", param: "alias", description: "advisories whose aliases contain this one", arg: "<alias>" },
      { flag: "component", param: "component_name", description: "the affected component's name", arg: "<name>" },
      { flag: "artifact", param: "artifact_name", description: "the artifact that ships the component", arg: "<name>" },
      { flag: "show-deleted", param: "show_deleted", kind: "bool", description: "include withdrawn advisories" },
    ],
  },
  fields: [],
  update: false,
  delete: false,
};

const IMPORT_PATH = "/vulnerabilities/v2beta1/advisories:import";
// Under the server's 1 MiB body limit, with room for the envelope.
const MAX_BATCH_BYTES = 900_000;
const OUTCOMES = {
  OUTCOME_CREATED: "created",
  OUTCOME_UPDATED: "updated",
  OUTCOME_UNCHANGED: "unchanged",
  OUTCOME_SKIPPED_OLDER: "skipped (older)",
} as const;
type Tally = Record<(typeof OUTCOMES)[keyof typeof OUTCOMES], number>;

function batchSize(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1000) throw new InvalidArgumentError("must be from 1 to 1000");
  return Number(value);
}

/** What became of the documents of one batch. */
interface BatchReport {
  imported: { doc: OsvDocument; result: JsonObject }[];
  /** One line per rejected document: its file and entry, then the server's error. */
  failed: string[];
}

// `documents[2].modified` → document 2, field `modified`; `documents[2]` → document 2, no field.
const DOCUMENT_FIELD = /^documents\[(\d+)\]\.?(.*)$/s;

/**
 * The server's violations per document of the call, or undefined when some
 * violation names no document of it (then the server did not say which failed).
 */
function violationsByDocument(status: RestStatus, count: number): Map<number, Violation[]> | undefined {
  const violations = detailsOfType(status, "google.rpc.BadRequest");
  if (violations.length === 0) return undefined;
  const byDoc = new Map<number, Violation[]>();
  for (const v of violations) {
    const m = DOCUMENT_FIELD.exec(v.field ?? "");
    if (!m || Number(m[1]) >= count) return undefined;
    const i = Number(m[1]);
    byDoc.set(i, [...(byDoc.get(i) ?? []), { ...v, field: m[2] }]);
  }
  return byDoc;
}

/** `b.json[1]: invalid argument: modified: is required`, from the server's typed error. */
function documentLine(doc: OsvDocument, status: RestStatus, violations?: Violation[]): string {
  const own: RestStatus = violations
    ? { ...status, details: [{ "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: violations }] }
    : status;
  return `${sourceOf(doc)}: ${statusLine(own)}`;
}

function isInvalidArgument(e: unknown): e is ApiError {
  return e instanceof ApiError && e.status.code === 3;
}

/**
 * Imports one batch, leaving out the documents the server rejects. A call is
 * all or nothing but its error names every bad document, so one retry without
 * them usually imports the rest; when the error names no document (a body
 * limit, a value the database refuses) each document is sent alone instead.
 * Anything but INVALID_ARGUMENT (auth, network) stops the whole import.
 */
async function importBatch(client: ApiClient, batch: OsvDocument[], report: BatchReport): Promise<void> {
  let pending = batch;
  while (pending.length > 0) {
    try {
      const res = await client.request("POST", IMPORT_PATH, { body: { documents: pending.map((d) => d.document) } });
      for (const result of (res["results"] as JsonObject[] | undefined) ?? []) {
        const doc = pending[Number(result["index"] ?? 0)];
        if (doc) report.imported.push({ doc, result });
      }
      return;
    } catch (e) {
      if (!isInvalidArgument(e)) throw e;
      const byDoc = violationsByDocument(e.status, pending.length);
      if (byDoc) {
        for (const [i, violations] of byDoc) report.failed.push(documentLine(pending[i]!, e.status, violations));
        pending = pending.filter((_, i) => !byDoc.has(i));
      } else if (pending.length === 1) {
        report.failed.push(documentLine(pending[0]!, e.status));
        return;
      } else {
        for (const doc of pending) await importBatch(client, [doc], report);
        return;
      }
    }
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function summary(tally: Tally, docs: number, files: number, failed: number, unreadable: number): string {
  const counts = Object.entries(tally).map(([outcome, n]) => `${n} ${outcome}`);
  if (failed) counts.push(`${failed} failed`);
  const notRead = unreadable ? `; ${plural(unreadable, "file")} could not be read` : "";
  return `imported ${docs - failed} of ${plural(docs, "document")} from ${plural(files, "file")}: ${counts.join(", ")}${notRead}`;
}

async function importFiles(ctx: CommandContext, files: string[], size: number): Promise<void> {
  const { documents: docs, unreadable, invalid } = await readOsvFiles(files);
  const client = ctx.client();
  const tally: Tally = { created: 0, updated: 0, unchanged: 0, "skipped (older)": 0 };
  // Problems found while reading come first: they are known before anything is sent.
  const report: BatchReport = { imported: [], failed: [...unreadable, ...invalid].map((p) => `${p.source}: ${p.reason}`) };
  // On this run's stderr (a test's stream is no terminal: no bar).
  const bar = ctx.io.stderr.isTTY
    ? new progress.SingleBar(
        { stream: ctx.io.stderr, format: "importing [{bar}] {value}/{total} documents", hideCursor: true, clearOnComplete: true },
        progress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(docs.length, 0);
  try {
    for (const batch of batches(docs, size, MAX_BATCH_BYTES)) {
      await importBatch(client, batch, report);
      bar?.increment(batch.length);
    }
  } finally {
    bar?.stop();
    // Printed after the bar is gone, so they do not tear it; even when something stopped the import.
    for (const line of report.failed) ctx.note(`error: ${line}`);
  }
  const results: JsonObject[] = [];
  for (const { doc, result } of report.imported) {
    const outcome = OUTCOMES[result["outcome"] as keyof typeof OUTCOMES];
    if (outcome) tally[outcome]++;
    // Indexes count every entry of every file, as if it were one call.
    results.push({ ...result, index: doc.ordinal });
  }
  const total = docs.length + invalid.length;
  const failed = total - report.imported.length;
  const line = summary(tally, total, files.length, failed, unreadable.length);
  if (ctx.output === "json") {
    ctx.printJson({ results });
    ctx.note(line);
  } else {
    ctx.print(line);
  }
  if (failed > 0 || unreadable.length > 0) {
    const parts = [
      ...(failed ? [`${failed} of ${plural(total, "document")} ${failed === 1 ? "was" : "were"} not imported`] : []),
      ...(unreadable.length ? [`${plural(unreadable.length, "file")} could not be read`] : []),
    ];
    // Bad input, like INVALID_ARGUMENT elsewhere: exit 2.
    throw new CliError(parts.join("; "), EXIT.usage);
  }
}

/** `platformctl advisories list|get|import` */
export function registerAdvisories(program: Command, io: CliIo): void {
  const group = program.command("advisories").description(`vulnerability advisories: ${advisories.path}`);
  addResourceCommands(group, advisories, io);
  group
    .command("import <files...>")
    .description("import OSV JSON files (each one document or an array), in batches")
    .option("--batch-size <n>", "documents per call (1 to 1000)", batchSize, 100)
    .action(async (files: string[], opts: { batchSize: number }, self: Command) => {
      await importFiles(await contextOf(self, io), files, opts.batchSize);
    });
}
