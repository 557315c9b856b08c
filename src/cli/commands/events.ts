import { toJson } from "@bufbuild/protobuf";
import { SubscriptionsService } from "../../../gen/platform/events/v2beta1/subscriptions_pb.js";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { InvalidArgumentError, type Command } from "commander";
import { decodeJwt } from "jose";
import { EventSchema, EventsService } from "../../../gen/platform/events/v2beta1/events_pb.js";
import { contextOf, type CommandContext } from "../context.js";
import { currentToken } from "../credentials.js";
import { ApiError, CliError, EXIT } from "../errors.js";
import type { CliIo } from "../io.js";
import { col, field, text, time, type Column } from "../output.js";
import type { JsonObject } from "../api-client.js";
import type { ResourceOverride } from "./derived-spec.js";
import { addList, type ResourceSpec } from "./resource.js";

function printSubscription(ctx: CommandContext, subscription: JsonObject): void {
  ctx.note(`subscription ${text(subscription["uid"])} sends to ${text(subscription["sink"])}.`);
  ctx.note("Its signing secret is shown only now; give it to the receiver to verify webhook-signature:");
  ctx.print(text(subscription["secret"]));
}

/** The derived `events subscriptions` commands, with flags and columns people read. */
export const EVENTS_OVERRIDES: Record<string, ResourceOverride> = {
  [SubscriptionsService.typeName]: {
    columns: [
      col("UID", "uid", "text", true),
      col("SINK", "sink"),
      { header: "TYPES", value: (s) => ((field(s, "types") as string[] | undefined) ?? []).join(",") || "(all)" },
      col("DELIVERED", "deliveredCount"),
      col("PENDING", "pendingCount"),
      col("FAILED", "failedCount"),
      col("LAST ERROR", "lastError"),
    ],
    parent: { flag: "group", description: "the group whose events (and its descendants') are sent", required: true },
    print: printSubscription,
    order: ["sink", "types"],
    fields: {
      sink: { description: "the https URL events are POSTed to", arg: "<url>" },
      types: { description: "an event type prefix, e.g. platform.iam.role_binding. (repeatable; none: every type)", arg: "<prefix>" },
      description: { description: "what it is for", arg: "<text>" },
    },
  },
};

const COLUMNS: Column[] = [
  col("TIME", "time", "time"),
  col("TYPE", "type"),
  col("SUBJECT", "subject", "text", true),
  col("ACTOR", "actor"),
];

/** One streamed event as a line of fixed-width columns, so that lines printed one by one align. */
function watchLine(event: JsonObject): string {
  return [time(event["time"]).padEnd(24), text(event["type"]).padEnd(44), text(event["subject"]), text(event["actor"])].join("  ");
}

/** Whether the JWT `token` has expired by its own `exp` (a token that is not a JWT has not). */
function expired(token: string): boolean {
  try {
    const { exp } = decodeJwt(token);
    // A minute early: this clock may be behind the server's.
    return exp !== undefined && exp * 1000 <= Date.now() + 60_000;
  } catch {
    return false;
  }
}

const WATCH_HEADER = ["TIME".padEnd(24), "TYPE".padEnd(44), "SUBJECT", "ACTOR"].join("  ");

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
      let token = await currentToken(ctx.store, ctx.api, ctx.env);
      const bearer: Interceptor = (next) => (req) => {
        req.header.set("authorization", `Bearer ${token}`);
        return next(req);
      };
      const client = createClient(EventsService, createConnectTransport({ baseUrl: ctx.api, httpVersion: "1.1", interceptors: [bearer] }));
      const abort = new AbortController();
      const stop = () => abort.abort();
      process.once("SIGINT", stop);
      let seen = 0;
      // Where the stream goes on from when it has to be opened again (its token expired).
      let after = opts.after ?? "";
      let renewedAt = 0;
      try {
        for (;;) {
          try {
            const stream = client.watchEvents(
              {
                uidp: { inRoot: opts.inRoot ?? "", childrenOf: opts.childrenOf ?? "" },
                type: opts.type ?? "",
                typePrefix: opts.typePrefix ?? "",
                subject: opts.subject ?? "",
                actor: opts.actor ?? "",
                afterId: after,
              },
              { signal: abort.signal },
            );
            for await (const event of stream) {
              const json = toJson(EventSchema, event) as JsonObject;
              // One line per event: JSON lines, or fixed-width columns under one header.
              if (ctx.output === "json") ctx.print(JSON.stringify(json));
              else ctx.print(seen === 0 ? `${WATCH_HEADER}\n${watchLine(json)}` : watchLine(json));
              seen++;
              after = event.id;
              if (opts.count !== undefined && seen >= opts.count) return;
            }
            return;
          } catch (e) {
            if (abort.signal.aborted) return;
            // The server ends a stream when its token expires: go on with a renewed one (a
            // workload's is exchanged again), after the last event printed. Not for a token that
            // has not expired (its identity was deleted, say: the server's message says so), nor
            // twice within a minute: a token refused as soon as it is renewed is refused for good.
            if (e instanceof ConnectError && e.code === Code.Unauthenticated && expired(token) && Date.now() - renewedAt > 60_000) {
              const renewed = await currentToken(ctx.store, ctx.api, ctx.env, token);
              if (renewed !== token) {
                token = renewed;
                renewedAt = Date.now();
                continue;
              }
            }
            throw e;
          }
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
