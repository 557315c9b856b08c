// Queries for PGlite's thread (pglite-host.ts) in one call into PGlite's WASM each, with the
// statements seen more than once kept prepared (docs/design.md, "Storage", "Statements in PGlite").
import { type PGlite, protocol, type QueryOptions, type Results } from "@electric-sql/pglite";

const { serialize } = protocol;

/** A statement as the backend described it: its parameters' types and its result's columns. */
interface Described {
  /** "" for the unnamed statement, which the next unnamed Parse replaces. */
  name: string;
  paramTypes: number[];
  fields: { name: string; dataTypeID: number }[];
}

type BackendMessage = { name: string } & Record<string, unknown>;

/** Statement names, unique in the process: two instances on one PGlite never take each other's. */
let named = 0;

/**
 * PostgreSQL's refusal of a statement kept prepared that it can no longer use as it is (its tables
 * changed shape), or no longer holds: not any 0A000, whose retry inside a transaction would hide
 * the real error behind "current transaction is aborted".
 */
function isStale(e: unknown): boolean {
  const { code, message } = e as { code?: unknown; message?: unknown };
  return (
    code === "26000" || (code === "0A000" && typeof message === "string" && message.includes("cached plan must not change result type"))
  );
}

/**
 * PGlite's `query` runs one statement in six calls into the WASM (Parse, Describe, Bind, Describe,
 * Execute, Sync), each with its own copies, and parses and plans the statement every time: a
 * primary-key read cost 1 ms here. These run it in one call, or two the first times a text is
 * seen, with the same results and errors as `query`: rows by name or as arrays, each value read by
 * the store's parsers (`query`'s `parsers` option winning), `affectedRows`, and PostgreSQL's error
 * with its fields. A text seen a second time is prepared under a name of its own and then runs
 * with Bind, Execute and Sync only, neither parsed nor planned again; at most `limit` are, for the
 * life of the store's connection, as the PostgreSQL pool's admission does (prepared-statements.ts).
 * A NOTIFY the statement raised is delivered by PGlite itself to its `listen` callbacks before
 * the answer, as with `query`.
 */
export class PgliteStatements {
  private readonly prepared = new Map<string, Described>();
  private seenOnce = new Set<string>();

  constructor(
    private readonly pg: PGlite,
    readonly limit = 256,
    private readonly seenLimit = 4_096,
  ) {}

  async query<T>(text: string, params: unknown[] | undefined, options: QueryOptions | undefined): Promise<Results<T>> {
    try {
      return await this.run<T>(text, params, options);
    } catch (e) {
      // As PGlite's `query` does: the failed statement and its parameters go with its error.
      if (e instanceof Error && "code" in e) Object.assign(e, { query: text, params });
      throw e;
    }
  }

  private async run<T>(text: string, params: unknown[] | undefined, options: QueryOptions | undefined): Promise<Results<T>> {
    const kept = this.prepared.get(text);
    if (kept) {
      try {
        return await this.execute<T>(kept, params, options);
      } catch (e) {
        // Prepared before its tables changed (a migration): described and prepared again, once.
        if (!isStale(e)) throw e;
        this.prepared.delete(text);
        await this.call(serialize.close({ type: "S", name: kept.name }), serialize.sync());
      }
    }
    const described = await this.describe(text, this.admit(text) ? `platform_${++named}` : "");
    if (described.name) this.prepared.set(text, described);
    return this.execute<T>(described, params, options);
  }

  /** Whether `text` is to be kept prepared: seen before, and there is room. */
  private admit(text: string): boolean {
    if (this.prepared.size >= this.limit) return false;
    if (this.seenOnce.delete(text)) return true;
    if (this.seenOnce.size >= this.seenLimit) this.seenOnce = new Set();
    this.seenOnce.add(text);
    return false;
  }

  private async describe(text: string, name: string): Promise<Described> {
    const messages = await this.call(serialize.parse({ name, text }), serialize.describe({ type: "S", name }), serialize.sync());
    const params = messages.find((m) => m.name === "parameterDescription") as { dataTypeIDs: number[] } | undefined;
    const row = messages.find((m) => m.name === "rowDescription") as { fields: { name: string; dataTypeID: number }[] } | undefined;
    return {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      fields: row?.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })) ?? [],
    };
  }

  private async execute<T>(statement: Described, params: unknown[] | undefined, options: QueryOptions | undefined): Promise<Results<T>> {
    const serializers = this.pg.serializers;
    const values = (params ?? []).map((value, i) => {
      if (value === null || value === undefined) return null;
      const type = statement.paramTypes[i]!;
      const serializer = options?.serializers?.[type] ?? serializers[type];
      return serializer ? serializer(value) : String(value);
    });
    const messages = await this.call(serialize.bind({ statement: statement.name, values }), serialize.execute({}), serialize.sync());
    const parsers = this.pg.parsers;
    const fields = statement.fields;
    const read = fields.map((f) => options?.parsers?.[f.dataTypeID] ?? parsers[f.dataTypeID]);
    const asArrays = options?.rowMode === "array";
    const rows: unknown[] = [];
    let affectedRows = 0;
    for (const message of messages) {
      if (message.name === "dataRow") {
        const raw = message["fields"] as (string | null)[];
        if (asArrays) {
          const row = new Array<unknown>(raw.length);
          for (let i = 0; i < raw.length; i++) row[i] = value(raw[i]!, read[i], fields[i]!.dataTypeID);
          rows.push(row);
        } else {
          const row: Record<string, unknown> = {};
          for (let i = 0; i < raw.length; i++) row[fields[i]!.name] = value(raw[i]!, read[i], fields[i]!.dataTypeID);
          rows.push(row);
        }
      } else if (message.name === "commandComplete") {
        affectedRows += affected(message["text"] as string);
      }
    }
    return { rows: rows as T[], fields, affectedRows };
  }

  /**
   * One call into the WASM with `messages`: the backend's answers as PGlite parsed them (it parses
   * every answer of its WASM, for notifications, whichever way it is called: its raw call would
   * have them parsed twice), or PostgreSQL's error, the first, thrown once all are read.
   */
  private async call(...messages: Uint8Array[]): Promise<BackendMessage[]> {
    return (await this.pg.execProtocolStream(Buffer.concat(messages))) as unknown as BackendMessage[];
  }
}

function value(raw: string | null, parser: ((value: string, type: number) => unknown) | undefined, type: number): unknown {
  if (raw === null) return null;
  return parser ? parser(raw, type) : raw;
}

/** Rows a command reports: INSERT's third word, UPDATE/DELETE/COPY/MERGE's second (as PGlite counts them). */
function affected(tag: string): number {
  const words = tag.split(" ");
  switch (words[0]) {
    case "INSERT":
      return Number.parseInt(words[2]!, 10);
    case "UPDATE":
    case "DELETE":
    case "COPY":
    case "MERGE":
      return Number.parseInt(words[1]!, 10);
    default:
      return 0;
  }
}
