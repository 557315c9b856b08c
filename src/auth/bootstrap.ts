import { chmod, mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { eq } from "drizzle-orm";
import { randomBytes } from "node:crypto";
import { grantRole, ROOT } from "../bindings/index.js";
import { schema, type Database } from "../db/index.js";
import type { MintedToken, TokenService } from "./tokens.js";

const BOOTSTRAP_SETTING = "bootstrap.identity_uid";

/**
 * The bootstrap identity: no parent group, `owner` at the root, so a fresh
 * installation has someone who may call the API. Idempotent, and it heals:
 * a deleted bootstrap identity or root binding comes back at the next start.
 */
export async function ensureBootstrapIdentity(db: Database, clock: () => Date): Promise<string> {
  return db.transaction(async (tx) => {
    await tx
      .insert(schema.settings)
      .values({ key: BOOTSTRAP_SETTING, value: randomBytes(8).toString("hex") })
      .onConflictDoNothing();
    const [setting] = await tx.select().from(schema.settings).where(eq(schema.settings.key, BOOTSTRAP_SETTING));
    if (!setting) throw new Error("bootstrap identity setting missing");
    const uid = setting.value;
    const now = clock();
    await tx
      .insert(schema.identities)
      .values({
        uid,
        parentUid: null,
        name: "bootstrap",
        description: "Created at first start; its token is written to the admin-token file.",
        lastSeenTime: now,
        createTime: now,
        updateTime: now,
      })
      .onConflictDoNothing();
    // Recorded as no event: no one acted, and nothing is served yet (docs/design.md, "Events").
    await grantRole(tx, undefined, ROOT, { identityUid: uid, roleUid: "owner", now, actor: "" });
    return uid;
  });
}

/**
 * Writes a fresh admin token to `<dataDir>/admin-token` (mode 0600) and
 * returns its path. The token goes to a new private file first, which then
 * replaces the old one in one rename: a reader (`cat .data/admin-token`)
 * sees the old token or the new one, never a half-written file.
 */
export async function writeAdminToken(dataDir: string, token: MintedToken): Promise<string> {
  await mkdir(dataDir, { recursive: true });
  const path = join(dataDir, "admin-token");
  const temporary = join(dataDir, `.admin-token.${randomBytes(6).toString("hex")}`);
  try {
    // `wx`: a file of that name that somehow exists is never written through.
    await writeFile(temporary, `${token.token}\n`, { mode: 0o600, flag: "wx" });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (e) {
    await rm(temporary, { force: true });
    throw e;
  }
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
