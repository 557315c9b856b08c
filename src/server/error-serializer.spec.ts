import type { PGlite } from "@electric-sql/pglite";
import { DrizzleQueryError, sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/pglite";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { takePgliteStore } from "../../test/support/store-pool.js";
import type { PgliteThread } from "../db/index.js";
import { serializeError, type SerializedError } from "./error-serializer.js";
import { createLogger } from "./logger.js";

const SECRET = "sup3r-s3cret-value";
const QUERY = 'insert into "identity_providers" ("uid", "oidc_client_secret") values ($1, $2)';

/** A PostgresError as postgres.js builds it: fields from the server, query and parameters attached (hidden unless debug). */
function postgresJsError(enumerable: boolean): Error {
  const PostgresError = postgres.PostgresError as unknown as new (fields: Record<string, string>) => Error;
  const err = new PostgresError({
    message: `invalid input syntax for type json: "${SECRET}"`,
    severity: "ERROR",
    code: "22P02",
    detail: `Token "${SECRET}" is invalid.`,
    where: `JSON data, line 1: ${SECRET}`,
    hint: `try ${SECRET}`,
    table_name: "identity_providers",
    column_name: "oidc_client_secret",
    routine: "report_invalid_token",
  });
  Object.defineProperties(err, {
    query: { value: QUERY, enumerable },
    parameters: { value: ["org/0123456789abcdef", SECRET], enumerable },
    args: { value: [SECRET], enumerable },
  });
  return err;
}

function expectNoSecret(out: SerializedError): void {
  const text = JSON.stringify(out);
  expect(text).not.toContain(SECRET);
  expect(text).not.toMatch(/"(params|parameters|detail|where|hint|args)"/);
}

describe("serializeError", () => {
  // A PGlite of the tests' pool (test/support/store-pool.ts): what matters is that the error is a real one.
  let store: Awaited<ReturnType<typeof takePgliteStore>>;
  let client: PgliteThread;
  beforeAll(async () => {
    store = await takePgliteStore();
    client = store.store;
  });
  afterAll(() => {
    store?.release();
  });

  it("a real DrizzleQueryError (PGlite): keeps class, SQLSTATE, query text and frames; drops params, detail and quoted values", async () => {
    // Drizzle's driver takes a PGlite; the store's thread has what it calls (src/db/client.ts).
    const db = drizzle(client as unknown as PGlite);
    const err = await db.execute(sql`select ${SECRET}::int as n, ${"other"}::text as t`).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DrizzleQueryError);
    // The raw error does carry the secret, in several places.
    expect(String((err as Error).stack)).toContain(SECRET);
    expect((err as DrizzleQueryError).params).toContain(SECRET);

    const out = serializeError(err);
    expectNoSecret(out);
    expect(out.type).toBe("DrizzleQueryError");
    expect(out.query).toBe("select $1::int as n, $2::text as t");
    expect(out.message).toBe("Failed query: select $1::int as n, $2::text as t");
    expect(out.stack).toMatch(/^Error: Failed query: select \$1::int as n, \$2::text as t\n\s+at /);
    expect(out.stack).not.toContain("params:");
    expect(out.cause).toMatchObject({ code: "22P02", severity: "ERROR", message: 'invalid input syntax for type integer: "…"' });
    expect(out.cause?.query).toBe("select $1::int as n, $2::text as t");
  });

  it("a postgres.js error, wrapped by drizzle or not, debug or not", () => {
    for (const enumerable of [false, true]) {
      const raw = postgresJsError(enumerable);
      const alone = serializeError(raw);
      expectNoSecret(alone);
      expect(alone).toMatchObject({
        type: "PostgresError",
        code: "22P02",
        severity: "ERROR",
        query: QUERY,
        table_name: "identity_providers",
        column_name: "oidc_client_secret",
        routine: "report_invalid_token",
        message: 'invalid input syntax for type json: "…"',
      });
      const wrapped = serializeError(new DrizzleQueryError(QUERY, ["org/0123456789abcdef", `${SECRET}\nsecond line ${SECRET}`], raw));
      expectNoSecret(wrapped);
      expect(wrapped.message).toBe(`Failed query: ${QUERY}`);
      expect(wrapped.cause?.type).toBe("PostgresError");
    }
  });

  it("plain errors keep their message, codes and cause chain; values that are not errors become text", () => {
    const inner = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
      code: "ECONNREFUSED",
      errno: -111,
      syscall: "connect",
      address: "127.0.0.1",
    });
    const out = serializeError(new Error("database unavailable", { cause: inner }));
    expect(out).toMatchObject({
      type: "Error",
      message: "database unavailable",
      cause: { code: "ECONNREFUSED", errno: -111, syscall: "connect" },
    });
    expect(serializeError(new AggregateError([postgresJsError(true)], "several")).errors?.[0]?.code).toBe("22P02");
    expect(serializeError(`thrown text\nparams: ${SECRET}`)).toEqual({ type: "string", message: "thrown text" });
    const cyclic: { message: string; cause?: unknown } = { message: "loop" };
    cyclic.cause = cyclic;
    expect(JSON.stringify(serializeError(cyclic))).toContain("loop");
  });
});

describe("createLogger", () => {
  it("logs errors through the serializer and censors authorization headers and tokens", () => {
    const lines: string[] = [];
    const log = createLogger("info", { write: (line: string) => void lines.push(line) });
    log.error({ err: new DrizzleQueryError(QUERY, [SECRET], postgresJsError(true)) }, "internal error");
    log.info({ req: { headers: { authorization: `Bearer ${SECRET}`, cookie: SECRET } }, token: SECRET }, "request");
    const text = lines.join("");
    expect(text).not.toContain(SECRET);
    expect(text).toContain('"code":"22P02"');
    expect(text).toContain("[redacted]");
  });
});
