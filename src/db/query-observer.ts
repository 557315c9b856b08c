import type { Sql } from "postgres";
import type { PgliteQueries, PgliteThreadTransaction } from "./pglite-thread.js";

/** Told of every query as it starts; the function it returns, as it ends. */
export type QueryObserver = () => (ok: boolean) => void;

type Unsafe = (...args: unknown[]) => unknown;

/**
 * postgres.js with its `unsafe` (through which Drizzle sends every query) replaced by
 * `wrap(unsafe)`, in transactions (`begin`) and savepoints too, whose callback, always last, gets
 * the transaction's own sql wrapped the same way. The wrapper is made once per `unsafe`, not on
 * every read of it: Drizzle reads it for every query.
 */
export function wrapPostgresQueries<T extends Sql>(sql: T, wrap: (unsafe: Unsafe, target: T) => Unsafe): T {
  let made: { of: unknown; wrapper: Unsafe } | undefined;
  return new Proxy(sql, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "unsafe") {
        if (made?.of !== value) made = { of: value, wrapper: wrap(value as Unsafe, target) };
        return made.wrapper;
      }
      if (prop === "begin" || prop === "savepoint") {
        return (...args: unknown[]) => {
          const fn = args[args.length - 1] as (tx: Sql) => unknown;
          args[args.length - 1] = (tx: Sql) => fn(wrapPostgresQueries(tx, wrap as (unsafe: Unsafe, target: Sql) => Unsafe));
          return (value as Unsafe).apply(target, args);
        };
      }
      return value;
    },
  });
}

/**
 * postgres.js, with every query Drizzle runs observed (metrics: docs/operations.md,
 * "Health, metrics and logs"). A query is a lazy promise that starts when awaited, so its `then`
 * is where it is timed.
 */
export function observedPostgres<T extends Sql>(sql: T, observe: QueryObserver): T {
  return wrapPostgresQueries(sql, (unsafe, target) => (...args: unknown[]) => {
    const query = unsafe.apply(target, args) as PromiseLike<unknown> & Record<string, unknown>;
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
