import { createServer, type AddressInfo, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer } from "./server.js";
import { takePgliteStore, takePostgresDatabase } from "./store-pool.js";

// The pools store-pool.ts keeps on globalThis: how many stores are idle.
const idle = (name: string): number => ((globalThis as Record<symbol, unknown[] | undefined>)[Symbol.for(name)] ?? []).length;
const postgres = Boolean(process.env["DATABASE_URL"]);
const poolName = postgres ? "platform-api.test.postgres-pool" : "platform-api.test.pglite-pool";

describe("startTestServer", () => {
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    port = (taken.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it("gives a failed start's store back to the pool, usable at once", async () => {
    // One store idle, so the failing start takes it rather than making one.
    (postgres ? await takePostgresDatabase() : await takePgliteStore()).release();
    const before = idle(poolName);
    expect(before).toBeGreaterThan(0);
    // The port is taken: the start fails after the store was opened, and closes it.
    await expect(startTestServer({ PORT: String(port) })).rejects.toThrow(/EADDRINUSE/);
    expect(idle(poolName)).toBe(before);
    // Emptied and handed out again: nothing of the failed start still holds it.
    const again = postgres ? await takePostgresDatabase() : await takePgliteStore();
    again.release();
  }, 30_000);
});
