import type { Sql } from "postgres";
import type { PgliteQueries, PgliteThreadTransaction } from "./pglite-thread.js";

/** Told of every query as it starts; the function it returns, as it ends. */
export type QueryObserver = () => (ok: boolean) => void;

/**
 * postgres.js, with every query Drizzle runs observed (metrics: docs/operations.md,
 * "Health, metrics and logs"). Drizzle sends its queries through `unsafe`, in transactions
 * through `begin` and `savepoint`; a query is a lazy promise that starts
 * when awaited, so its `then` is where it is timed.
 */
export function observedPostgres<T extends Sql>(sql: T, observe: QueryObserver): T {
  // Drizzle reads `unsafe` for every query: its wrapper is made once, not per read.
  let unsafe: { of: unknown; wrapper: (...args: unknown[]) => unknown } | undefined;
  return new Proxy(sql, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "unsafe") {
        if (unsafe?.of === value) return unsafe.wrapper;
        const wrapper = (...args: unknown[]) => {
          const query = (value as (...a: unknown[]) => PromiseLike<unknown> & Record<string, unknown>).apply(target, args);
          const then = query.then;
          query.then = function (this: unknown, onOk?: (v: unknown) => unknown, onError?: (e: unknown) => unknown) {
            query.then = then;
            const done = observe();
            return then.call(
              query,
              (v: unknown) => {
                done(true);
                return onOk ? onOk(v) : v;
              },
              (e: unknown) => {
                done(false);
                if (onError) return onError(e);
                throw e;
              },
            );
          } as typeof then;
          return query;
        };
        unsafe = { of: value, wrapper };
        return wrapper;
      }
      if (prop === "begin" || prop === "savepoint") {
        // The callback, always last, gets the transaction's own sql: observed too.
        return (...args: unknown[]) => {
          const fn = args[args.length - 1] as (tx: Sql) => unknown;
          args[args.length - 1] = (tx: Sql) => fn(observedPostgres(tx, observe));
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return value;
    },
  });
}

/** PGlite, with every query Drizzle runs observed (`query`, and `query` of a transaction). */
export function observedPglite<T extends PgliteQueries>(client: T, observe: QueryObserver): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "query") {
        return async (...args: unknown[]) => {
          const done = observe();
          try {
            const result: unknown = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
            done(true);
            return result;
          } catch (e) {
            done(false);
            throw e;
          }
        };
      }
      if (prop === "transaction") {
        return (fn: (tx: PgliteThreadTransaction) => unknown) =>
          (value as (f: (tx: PgliteThreadTransaction) => unknown) => unknown).call(target, (tx: PgliteThreadTransaction) =>
            fn(observedPglite(tx, observe)),
          );
      }
      // PgliteThread keeps state in private fields: its methods must run on the PGlite itself, not the proxy.
      return (value as (...a: unknown[]) => unknown).bind(target);
    },
  });
}
