import { join } from "node:path";
import { eq } from "drizzle-orm";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { BUILT_IN_ROLES, enumCapabilities } from "../../src/capabilities/index.js";
import { newRootBindingUid, openDatabase, schema } from "../../src/db/index.js";
import { startApp } from "../../src/server/app.js";
import { loadConfig } from "../../src/server/config.js";
import { restClient, type JsonObject } from "../support/clients.js";
import { freshStorePerTest } from "../support/fresh-store.js";
import { ok } from "../support/rest-iam.js";

// The server writes the built-in roles from the catalogue at start and says so in its log
// (docs/design.md, "Built-in roles"). The store outlives a server here, so a restart sees
// what the previous run (or a hand edit) left.

const T0 = new Date("2030-01-01T00:00:00.000Z");
const MESSAGES = [
  "built-in roles written from the catalogue",
  "built-in roles no longer in the catalogue are kept while bindings, invites or identity providers still use them",
];

const store = freshStorePerTest("platform-built-in-roles");

/** Starts the server on the test's store, runs `body`, stops it; returns what it logged about built-in roles. */
async function run(body: (url: string, token: string) => Promise<void> = async () => {}): Promise<JsonObject[]> {
  const lines: JsonObject[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line) as JsonObject) });
  const config = loadConfig({
    PORT: "0",
    HOST: "127.0.0.1",
    PLATFORM_DATA_DIR: store.dir,
    ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
  });
  const app = await startApp(config, { logger });
  try {
    await body(`http://127.0.0.1:${app.port}`, app.adminToken?.token ?? "");
  } finally {
    await app.close();
  }
  return lines
    .filter((l) => MESSAGES.includes(l["msg"] as string))
    .map(({ level, msg, written, removed, kept }) => ({ level, msg, written, removed, kept }) as JsonObject);
}

describe("built-in roles at server start", () => {
  it("restores a hand-edited role, logs what it wrote and what it kept, and writes nothing on a plain restart", async () => {
    const first = await run();
    expect(first).toEqual([{ level: 30, msg: MESSAGES[0], written: expect.any(Array), removed: [], kept: undefined }]);
    expect((first[0]!["written"] as string[]).sort()).toEqual(BUILT_IN_ROLES.map((r) => r.uid).sort());

    // Between runs: viewer edited by hand, and a built-in the catalogue does not have, still bound.
    const handle = await openDatabase({
      pgliteDir: join(store.dir, "pglite"),
      ...(store.databaseUrl ? { databaseUrl: store.databaseUrl } : {}),
    });
    try {
      const db = handle.db;
      await db
        .update(schema.roles)
        .set({ capabilities: ["repo.list"] })
        .where(eq(schema.roles.uid, "viewer"));
      await db
        .insert(schema.roles)
        .values({ uid: "legacy", path: "legacy", name: "legacy", capabilities: [], createTime: T0, updateTime: T0 });
      await db.insert(schema.identities).values({ uid: "00000000000000aa", name: "someone", createTime: T0, updateTime: T0 });
      await db
        .insert(schema.rootRoleBindings)
        .values({ uid: newRootBindingUid(), identityUid: "00000000000000aa", roleUid: "legacy", createTime: T0 });
    } finally {
      await handle.close();
    }

    const viewer = BUILT_IN_ROLES.find((r) => r.uid === "viewer")!;
    const second = await run(async (url, token) => {
      const served = await ok(restClient(url, token)("GET", "/iam/v2beta1/roles/viewer"));
      expect(served["capabilities"]).toEqual(enumCapabilities(viewer.capabilities));
    });
    expect(second).toEqual([
      { level: 30, msg: MESSAGES[0], written: ["viewer"], removed: [], kept: undefined },
      { level: 40, msg: MESSAGES[1], written: undefined, removed: undefined, kept: ["legacy"] },
    ]);

    // Only the warning repeats: the kept row is still bound, and nothing else differs.
    expect(await run()).toEqual([{ level: 40, msg: MESSAGES[1], written: undefined, removed: undefined, kept: ["legacy"] }]);
  }, 90_000); // three server starts on one store
});
