import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { InvalidArgumentError, type Command } from "commander";
import { EventSchema, EventsService } from "../../../gen/platform/events/v2beta1/events_pb.js";
import { contextOf } from "../context.js";
import { currentToken } from "../credentials.js";
import { ApiError, CliError, EXIT } from "../errors.js";
import type { CliIo } from "../io.js";
import { col, renderTable, type Column } from "../output.js";
import { addList, type ResourceSpec } from "./resource.js";

const COLUMNS: Column[] = [col("TIME", "time", "time"), col("TYPE", "type"), col("SUBJECT", "subject", "text", true), col("ACTOR", "actor")];

const FILTERS = [
  { flag: "type", param: "type", description: "exact event type (platform.iam.role_binding.created.v1)", arg: "<type>" },
  { flag: "type-prefix", param: "type_prefix", description: "types starting with this (platform.iam.)", arg: "<prefix>" },
  { flag: "subject", param: "subject", description: "events about this resource uid", arg: "<uid>" },
  { flag: "actor", param: "actor", description: "events made by this identity uid", arg: "<uid>" },
];

/** `platformctl events list`: the audit log, on the shared list command. */
const events: ResourceSpec = {
  command: "events",
  kind: "event",
  path: "/events/v2beta1/events",
  listKey: "events",
  columns: COLUMNS,
  list: {
    scopes: "all",
    name: false,
    filters: [
      ...FILTERS,
      { flag: "since", param: "since", description: "recorded at or after this time (RFC 3339)", arg: "<time>" },
      { flag: "until", param: "until", description: "recorded before this time (RFC 3339)", arg: "<time>" },
    ],
  },
  fields: [],
  update: false,
  delete: false,
};

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1) throw new InvalidArgumentError("must be a whole number above 0");
  return n;
}

interface WatchOptions {
  type?: string;
  typePrefix?: string;
  subject?: string;
  actor?: string;
  inRoot?: string;
  childrenOf?: string;
  after?: string;
  count?: number;
}

/** Adds `list` and `watch` to the `events` command (whose `subscriptions` are derived from the protos). */
export function registerEvents(program: Command, io: CliIo): void {
  const group = program.commands.find((c) => c.name() === "events") ?? program.command("events");
  group.description("the audit log (list, watch) and webhook subscriptions");
  addList(group, events, io);
  group
    .command("watch")
    .description("stream events as they are recorded, until interrupted (Ctrl-C) or --count of them")
    .option("--in-root <uid>", "the events of this group and everything below it")
    .option("--children-of <uid>", "the events of this group only")
    .option("--type <type>", FILTERS[0]!.description)
    .option("--type-prefix <prefix>", FILTERS[1]!.description)
    .option("--subject <uid>", FILTERS[2]!.description)
    .option("--actor <uid>", FILTERS[3]!.description)
    .option("--after <id>", "first replay the events recorded after this event id (resume)")
    .option("--count <n>", "stop after this many events", positive)
    .action(async (opts: WatchOptions, self: Command) => {
      const ctx = await contextOf(self, io);
      const token = await currentToken(ctx.store, ctx.api, ctx.env);
      const bearer: Interceptor = (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      };
      const client = createClient(EventsService, createConnectTransport({ baseUrl: ctx.api, httpVersion: "1.1", interceptors: [bearer] }));
      const abort = new AbortController();
      const stop = () => abort.abort();
      process.once("SIGINT", stop);
      let seen = 0;
      try {
        const stream = client.watchEvents(
          {
            uidp: { inRoot: opts.inRoot ?? "", childrenOf: opts.childrenOf ?? "" },
            type: opts.type ?? "",
            typePrefix: opts.typePrefix ?? "",
            subject: opts.subject ?? "",
            actor: opts.actor ?? "",
            afterId: opts.after ?? "",
          },
          { signal: abort.signal },
        );
        for await (const event of stream) {
          const json = toJson(EventSchema, event) as Record<string, never>;
          // One line per event: JSON lines, or a table row without its header after the first.
          if (ctx.output === "json") ctx.print(JSON.stringify(json));
          else ctx.print(renderTable(COLUMNS, [json]).split("\n").slice(seen === 0 ? 0 : 1).join("\n"));
          seen++;
          if (opts.count !== undefined && seen >= opts.count) break;
        }
      } catch (e) {
        if (abort.signal.aborted) return;
        if (e instanceof ConnectError) {
          if (e.code === Code.Unavailable) throw new CliError(`cannot reach ${ctx.api}: ${e.rawMessage}`, EXIT.unavailable);
          throw new ApiError({ code: e.code, message: e.rawMessage, details: [] });
        }
        throw e;
      } finally {
        process.removeListener("SIGINT", stop);
        abort.abort();
      }
    });
}
