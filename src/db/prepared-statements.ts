import type { Sql } from "postgres";
import { wrapPostgresQueries } from "./query-observer.js";

/**
 * Which statement texts postgres.js may keep prepared on its connections (docs/design.md,
 * "Storage"). Drizzle sends every query it was not asked to `.prepare()` as an unnamed statement,
 * and postgres.js sends an unnamed statement with parameters in two round trips (Parse and
 * Describe, then, once the parameter types are back, Bind and Execute); a prepared one is
 * described once per connection and then costs one. But a prepared statement lives on the
 * server until its connection closes, and some texts are as many as the requests that shape them
 * (a List filter, an IN list's length), so admission is bounded: a text is admitted the second
 * time it is seen (once is not a pattern), while fewer than `limit` are; the rest go on as before.
 * Admission is for the life of the process (what a connection prepared stays there, so evicting it
 * here would free nothing): a caller who fills the slots with rare texts costs later texts their
 * second round trip, never memory. The hot statements are named in code and prepared anyway
 * (Drizzle's `.prepare()`, src/db/compiled.ts), so they need no slot.
 */
export class StatementAdmission {
  private readonly admitted = new Set<string>();
  private seenOnce = new Set<string>();

  constructor(
    readonly limit = 256,
    private readonly seenLimit = 4_096,
  ) {}

  /** Whether `text` may be prepared: already admitted, or seen before and there is room. */
  admit(text: string): boolean {
    if (this.admitted.has(text)) return true;
    if (this.admitted.size >= this.limit) return false;
    if (this.seenOnce.delete(text)) {
      this.admitted.add(text);
      return true;
    }
    // Forgotten wholesale when full: a text seen once long ago is not worth remembering.
    if (this.seenOnce.size >= this.seenLimit) this.seenOnce = new Set();
    this.seenOnce.add(text);
    return false;
  }

  get size(): number {
    return this.admitted.size;
  }
}

/**
 * postgres.js whose `unsafe` queries (what Drizzle sends), in transactions too, are prepared when
 * `admission` admits their text. A query Drizzle already prepares passes as it is.
 */
export function preparingPostgres<T extends Sql>(sql: T, admission: StatementAdmission): T {
  return wrapPostgresQueries(sql, (unsafe, target) => (...args: unknown[]) => {
    // Drizzle's form: (text, params, { prepare }). Any other is passed on as it came.
    const options = args[2] as { prepare?: boolean } | undefined;
    if (args.length === 3 && options?.prepare === false && admission.admit(args[0] as string)) {
      args = [args[0], args[1], { ...options, prepare: true }];
    }
    return unsafe.apply(target, args);
  });
}
