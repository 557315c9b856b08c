// The messages between pglite-thread.ts (the main thread) and pglite-host.ts (PGlite's thread).

export interface HostStart {
  dataDir: string;
  /** A template to copy into `dataDir` when it is new (pglite-template.ts). */
  template?: string | undefined;
}

export type HostRequest = { id: number } & (
  | {
      op: "query";
      text: string;
      params: unknown[] | undefined;
      rowMode: "array" | "object" | undefined;
      /** Types whose values stay text (the caller's parsers return their input: drizzle's timestamps). */
      rawTypes: number[] | undefined;
    }
  | { op: "exec"; text: string }
  | { op: "listen"; channel: string }
  | { op: "unlisten"; channel: string }
  | { op: "close" }
);

export type HostReply =
  | { op: "ready" }
  | { op: "failed"; error: ErrorFields }
  | { op: "notify"; channel: string; payload: string }
  | { op: "reply"; id: number; ok: true; value: unknown }
  | { op: "reply"; id: number; ok: false; error: ErrorFields };

/** An error as it crosses the thread: its message, stack and fields (SQLSTATE `code`, `table`, …). */
export interface ErrorFields {
  message: string;
  stack: string | undefined;
  fields: Record<string, unknown>;
}

/**
 * What of an error crosses: a structured clone of an Error keeps its message but drops its own
 * fields, and PGlite's DatabaseError holds what the services read (`code`, `table`, `constraint`)
 * in them. Values that cannot be cloned (the query's options hold functions) stay behind.
 */
export function errorFields(e: unknown): ErrorFields {
  if (!(e instanceof Error)) return { message: String(e), stack: undefined, fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(e)) {
    if (value === undefined || typeof value === "function" || key === "queryOptions") continue;
    try {
      fields[key] = structuredClone(value);
    } catch {
      // Not cloneable: not something a caller of the store reads.
    }
  }
  return { message: e.message, stack: e.stack, fields };
}

/** An error PostgreSQL raised in PGlite's thread (PGlite's own class has a minified name). */
export class DatabaseError extends Error {}

/** The error a caller sees: its message, stack and fields (SQLSTATE `code` and all) as they were. */
export function toError(fields: ErrorFields): Error {
  const error = typeof fields.fields["code"] === "string" ? new DatabaseError(fields.message) : new Error(fields.message);
  if (fields.stack) error.stack = fields.stack;
  Object.assign(error, fields.fields);
  return error;
}
