import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { randomBytes } from "node:crypto";
import { schema, type Database } from "../db/index.js";
import type { MintedToken, TokenService } from "./tokens.js";

const BOOTSTRAP_SETTING = "bootstrap.identity_uid";

/**
 * The bootstrap identity: created once, with no parent group, so a fresh
 * installation has someone who may call the API.
 */
export async function ensureBootstrapIdentity(db: Database, clock: () => Date): Promise<string> {
  const uid = randomBytes(8).toString("hex");
  await db.transaction(async (tx) => {
    const inserted = await tx
      .insert(schema.settings)
      .values({ key: BOOTSTRAP_SETTING, value: uid })
      .onConflictDoNothing()
      .returning();
    if (inserted.length === 0) return;
    const now = clock();
    await tx.insert(schema.identities).values({
      uid,
      parentUid: null,
      name: "bootstrap",
      description: "Created at first start; its token is written to the admin-token file.",
      lastSeenTime: now,
      createTime: now,
      updateTime: now,
    });
  });
  const [row] = await db.select().from(schema.settings).where(eq(schema.settings.key, BOOTSTRAP_SETTING));
  if (!row) throw new Error("bootstrap identity setting missing");
  return row.value;
}

/** Writes a fresh admin token to `<dataDir>/admin-token` (mode 0600) and returns its path. */
export async function writeAdminToken(dataDir: string, token: MintedToken): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, "admin-token");
  await writeFile(path, `${token.token}\n`, { mode: 0o600 });
  await chmod(path, 0o600);
  return path;
}

export async function bootstrapAdminToken(
  db: Database,
  tokens: TokenService,
  audience: string,
  clock: () => Date,
): Promise<{ identityUid: string; token: MintedToken }> {
  const identityUid = await ensureBootstrapIdentity(db, clock);
  return { identityUid, token: await tokens.mint(identityUid, audience) };
}
