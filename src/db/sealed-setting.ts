import { and, eq } from "drizzle-orm";
import { SecretBox } from "../crypto/index.js";
import type { Database } from "./client.js";
import { settings } from "./tables/system.js";

/** What a setting's value is sealed for: another setting's value does not open under it. */
export const settingContext = (key: string): string => `settings:${key}`;

/**
 * A secret server-wide setting (a key every replica shares), sealed at rest
 * with `box`: created from `generate()` on first use, read and opened
 * otherwise. A value written before encryption at rest (plain text) is
 * re-sealed in place, once.
 */
export async function loadSealedSetting(db: Database, box: SecretBox, key: string, generate: () => string): Promise<string> {
  const context = settingContext(key);
  await db
    .insert(settings)
    .values({ key, value: box.seal(generate(), context) })
    .onConflictDoNothing();
  const [row] = await db.select().from(settings).where(eq(settings.key, key));
  if (!row) throw new Error(`setting ${key} missing after insert`);
  const plain = box.open(row.value, context);
  if (!SecretBox.isSealed(row.value)) {
    // Compare-and-set: a replica that re-sealed it first keeps its (equivalent) value.
    await db
      .update(settings)
      .set({ value: box.seal(plain, context) })
      .where(and(eq(settings.key, key), eq(settings.value, row.value)));
  }
  return plain;
}
