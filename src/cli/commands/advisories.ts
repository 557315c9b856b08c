import { InvalidArgumentError, type Command } from "commander";
import progress from "cli-progress";
import type { JsonObject } from "../api-client.js";
import { contextOf, type CommandContext } from "../context.js";
import { ApiError, CliError, EXIT } from "../errors.js";
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

// `documents[2].modified` in a batch's error → `b.json[1].modified`: the file the user can fix.
function batchErrorLine(err: ApiError, batch: OsvDocument[]): string {
  return err.message.replace(/documents\[(\d+)\]/g, (whole, i: string) => {
    const doc = batch[Number(i)];
    return doc ? sourceOf(doc) : whole;
  });
}

function summary(tally: Tally, docs: number, files: number, failed: number): string {
  const counts = Object.entries(tally).map(([outcome, n]) => `${n} ${outcome}`);
  return `imported ${docs - failed} of ${docs} documents from ${files} file${files === 1 ? "" : "s"}: ${counts.join(", ")}${failed ? `, ${failed} failed` : ""}`;
}

async function importFiles(ctx: CommandContext, files: string[], size: number): Promise<void> {
  const docs = await readOsvFiles(files);
  const client = ctx.client();
  const tally: Tally = { created: 0, updated: 0, unchanged: 0, "skipped (older)": 0 };
  const results: JsonObject[] = [];
  const errors: string[] = [];
  let failed = 0;
  let firstExit: number = EXIT.ok;
  const bar = process.stderr.isTTY
    ? new progress.SingleBar(
        { stream: process.stderr, format: "importing [{bar}] {value}/{total} documents", hideCursor: true, clearOnComplete: true },
        progress.Presets.shades_classic,
      )
    : undefined;
  bar?.start(docs.length, 0);
  let offset = 0;
  try {
    for (const batch of batches(docs, size, MAX_BATCH_BYTES)) {
      try {
        const res = await client.request("POST", IMPORT_PATH, { body: { documents: batch.map((d) => d.document) } });
        for (const r of (res["results"] as JsonObject[] | undefined) ?? []) {
          const outcome = OUTCOMES[r["outcome"] as keyof typeof OUTCOMES];
          if (outcome) tally[outcome]++;
          // Indexes count across every batch, as if it were one call.
          results.push({ ...r, index: offset + Number(r["index"] ?? 0) });
        }
      } catch (e) {
        // A batch with bad documents does not stop the others; anything else (auth, network) does.
        if (!(e instanceof ApiError) || e.status.code !== 3) throw e;
        errors.push(batchErrorLine(e, batch));
        failed += batch.length;
        if (firstExit === EXIT.ok) firstExit = e.exitCode;
      }
      offset += batch.length;
      bar?.increment(batch.length);
    }
  } finally {
    bar?.stop();
  }
  for (const line of errors) ctx.note(`error: ${line}`);
  if (ctx.output === "json") {
    ctx.printJson({ results });
    ctx.note(summary(tally, docs.length, files.length, failed));
  } else {
    ctx.print(summary(tally, docs.length, files.length, failed));
  }
  if (failed > 0) throw new CliError(`${failed} of ${docs.length} documents were not imported`, firstExit);
}

/** `platformctl advisories list|get|import` */
export function registerAdvisories(program: Command): void {
  const group = program.command("advisories").description(`vulnerability advisories: ${advisories.path}`);
  addResourceCommands(group, advisories);
  group
    .command("import <files...>")
    .description("import OSV JSON files (each one document or an array), in batches")
    .option("--batch-size <n>", "documents per call (1 to 1000)", batchSize, 100)
    .action(async (files: string[], opts: { batchSize: number }, self: Command) => {
      await importFiles(await contextOf(self), files, opts.batchSize);
    });
}
