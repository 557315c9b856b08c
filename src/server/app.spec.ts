import { mkdir, rm } from "node:fs/promises";
import net from "node:net";
import { join } from "node:path";
import { pino } from "pino";
import postgres from "postgres";
import { describe, expect, it } from "vitest";
import { freshStorePerTest } from "../../test/support/fresh-store.js";
import { startApp } from "./app.js";
import { loadConfig } from "./config.js";

const store = freshStorePerTest("platform-failed-start");

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Whether something accepts connections on `port`. */
function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Connections other than this one's to the database at `url`. */
async function otherConnections(url: string): Promise<number> {
  const client = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await client<
      { n: number }[]
    >`select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`;
    return row?.n ?? 0;
  } finally {
    await client.end();
  }
}

describe("startApp", () => {
  it("closes what it had started when the start fails part-way: the port, the loops, the store and its directory's lock", async () => {
    const port = await freePort();
    const settings = {
      PORT: String(port),
      HOST: "127.0.0.1",
      PLATFORM_DATA_DIR: store.dir,
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
    };
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    // A directory where the admin token goes: the start fails at its end, once the port, the
    // store, the listens and the background loops (event hub, dispatcher, retention) have started.
    await mkdir(join(store.dir, "admin-token", "taken"), { recursive: true });
    await expect(startApp(loadConfig(settings), { logger })).rejects.toThrow(/admin-token/);

    expect(await connects(port)).toBe(false);
    if (store.databaseUrl) await expect.poll(() => otherConnections(store.databaseUrl!)).toBe(0);
    // Nothing queried the store after it closed, and every close succeeded.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);

    // On PGlite the directory's lock was released: the same process opens the store again.
    await rm(join(store.dir, "admin-token"), { recursive: true });
    const app = await startApp(loadConfig(settings), { logger });
    expect(app.port).toBe(port);
    await app.close();
  });

  it("vacuums and analyzes the embedded store itself from its start, PGlite having no autovacuum; leaves PostgreSQL's to autovacuum", async () => {
    const settings = {
      PORT: String(await freePort()),
      HOST: "127.0.0.1",
      PLATFORM_DATA_DIR: store.dir,
      ...(store.databaseUrl ? { DATABASE_URL: store.databaseUrl } : {}),
    };
    const lines: { level: number; msg: string; table?: string; analyzed?: boolean }[] = [];
    const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const app = await startApp(loadConfig(settings), { logger });
    const vacuumed = () => lines.filter((l) => l.msg === "embedded store table vacuumed");
    try {
      if (store.databaseUrl) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(vacuumed()).toEqual([]);
      } else {
        // The first round runs at start: the built-in roles were never analyzed.
        await expect.poll(() => vacuumed().find((l) => l.table === "roles")?.analyzed, { timeout: 10_000 }).toBe(true);
      }
    } finally {
      await app.close();
    }
    const after = vacuumed().length;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(vacuumed().length).toBe(after);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  });
});
