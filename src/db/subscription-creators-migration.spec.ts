import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/pglite";
import { migrate } from "drizzle-orm/pglite/migrator";
import { afterAll, describe, expect, it } from "vitest";

// Migration 0010 (docs/design.md, "Webhooks"): subscriptions made before creators were recorded
// take the actor of their latest create or update event; without one they are stopped, saying why,
// and their pending deliveries failed.

const migrations = fileURLToPath(new URL("./migrations", import.meta.url));
const scratch = await mkdtemp(join(tmpdir(), "migrations-0009-"));
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** The migrations folder as it was before 0010. */
async function migrationsBefore0010(): Promise<string> {
  await cp(migrations, scratch, { recursive: true });
  const journalPath = join(scratch, "meta", "_journal.json");
  const journal = JSON.parse(await readFile(journalPath, "utf8")) as { entries: { idx: number }[] };
  journal.entries = journal.entries.filter((e) => e.idx < 10);
  await writeFile(journalPath, JSON.stringify(journal));
  return scratch;
}

describe("migration 0010_subscription_creators", () => {
  it("gives an older subscription the actor of its latest create or update event, and stops one without such an event, failing its pending deliveries", async () => {
    const client = new PGlite();
    try {
      const db = drizzle(client);
      await migrate(db, { migrationsFolder: await migrationsBefore0010() });
      const now = "2030-01-01T00:00:00.000Z";
      await db.execute(sql`INSERT INTO groups (uid, parent_uid, name, create_time, update_time) VALUES ('g', NULL, 'g', ${now}, ${now})`);
      for (const uid of ["g/updated", "g/created", "g/unknown"]) {
        await db.execute(
          sql`INSERT INTO subscriptions (uid, parent_uid, sink, secret, create_time, update_time) VALUES (${uid}, 'g', 'https://example.com/', 's', ${now}, ${now})`,
        );
      }
      const event = (uid: string, type: string, subject: string, actor: string) =>
        db.execute(sql`INSERT INTO events (uid, type, source, subject, actor, parent_uid, time, data)
          VALUES (${uid}, ${type}, 'https://test', ${subject}, ${actor}, 'g', ${now}, '{}'::jsonb)`);
      await event("e1", "platform.events.subscription.created.v1", "g/updated", "g/alice");
      await event("e2", "platform.events.subscription.updated.v1", "g/updated", "g/bob");
      await event("e3", "platform.registry.repo.created.v1", "g/updated", "g/mallory");
      await event("e4", "platform.events.subscription.created.v1", "g/created", "g/carol");
      for (const [sub, ev] of [
        ["g/created", "e4"],
        ["g/unknown", "e3"],
      ]) {
        await db.execute(sql`INSERT INTO event_deliveries (subscription_uid, event_uid, event_seq, subject, next_attempt_time, deadline)
          VALUES (${sub}, ${ev}, 1, 's', ${now}, ${now})`);
      }

      await migrate(db, { migrationsFolder: migrations });
      const rows = await db.execute<{ uid: string; creator_uid: string | null; state: string }>(
        sql`SELECT uid, creator_uid, state FROM subscriptions ORDER BY uid`,
      );
      expect(rows.rows).toEqual([
        { uid: "g/created", creator_uid: "g/carol", state: "active" },
        { uid: "g/unknown", creator_uid: null, state: "stopped" },
        { uid: "g/updated", creator_uid: "g/bob", state: "active" },
      ]);
      const stopped = await db.execute<{ last_error: string }>(sql`SELECT last_error FROM subscriptions WHERE uid = 'g/unknown'`);
      expect(stopped.rows[0]?.last_error).toMatch(/^stopped: made before subscriptions recorded whom they send for/);
      const deliveries = await db.execute<{ subscription_uid: string; state: string; last_error: string }>(
        sql`SELECT subscription_uid, state, last_error FROM event_deliveries ORDER BY subscription_uid`,
      );
      expect(deliveries.rows).toEqual([
        { subscription_uid: "g/created", state: "pending", last_error: "" },
        { subscription_uid: "g/unknown", state: "failed", last_error: stopped.rows[0]?.last_error },
      ]);
    } finally {
      await client.close();
    }
  }, 90_000); // a new PGlite, migrated twice: seconds of CPU, far more on a loaded machine
});
