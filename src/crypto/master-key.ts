import { randomBytes } from "node:crypto";
import { chmod, link, readFile, stat, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensurePrivateDir } from "./private-dir.js";
import { SECRET_BOX_KEY_BYTES } from "./secret-box.js";

/** The key file's name in the data directory, used when PLATFORM_MASTER_KEY is unset. */
export const MASTER_KEY_FILE = "master-key";

const HEX = /^[0-9a-fA-F]{64}$/;
// 32 bytes are 43 base64 characters plus one padding "="; either alphabet, not mixed.
const BASE64 = /^(?:[A-Za-z0-9+/]{43}|[A-Za-z0-9_-]{43})=?$/;

/**
 * A master key from its text: 32 bytes as 64 hex digits, or as base64
 * (standard or URL-safe alphabet, padding optional). Surrounding whitespace
 * is ignored; anything else is undefined.
 */
export function decodeMasterKey(text: string): Buffer | undefined {
  const t = text.trim();
  if (HEX.test(t)) return Buffer.from(t, "hex");
  if (!BASE64.test(t)) return undefined;
  const standard = t.replace(/=$/, "").replace(/-/g, "+").replace(/_/g, "/");
  const key = Buffer.from(standard, "base64");
  // The last character carries two spare bits; only the canonical spelling is a key (no silent truncation).
  if (key.length !== SECRET_BOX_KEY_BYTES || key.toString("base64").slice(0, 43) !== standard) return undefined;
  return key;
}

export interface LoadedMasterKey {
  key: Buffer;
  /** Set when the key comes from the data directory's key file rather than PLATFORM_MASTER_KEY. */
  file?: { path: string; created: boolean };
}

/**
 * The master key: the configured one (PLATFORM_MASTER_KEY), or else the
 * key file `<dataDir>/master-key`, created at first start (mode 0600, in a
 * data directory forced to 0700).
 *
 * A key file is per machine: replicas sharing one PostgreSQL database must
 * all be given the same PLATFORM_MASTER_KEY, or each seals with its own key
 * and cannot open what the others sealed.
 */
export async function loadMasterKey(opts: { configured: Buffer | undefined; dataDir: string }): Promise<LoadedMasterKey> {
  if (opts.configured) return { key: Buffer.from(opts.configured) };
  await ensurePrivateDir(opts.dataDir);
  const path = join(opts.dataDir, MASTER_KEY_FILE);
  const existing = await readKeyFile(path);
  if (existing) return { key: existing, file: { path, created: false } };

  const key = randomBytes(SECRET_BOX_KEY_BYTES);
  // Written aside, then linked into place: a process starting at the same time
  // either wins the link or reads the winner's complete file, never a partial one.
  const aside = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  await writeFile(aside, `${key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  try {
    await chmod(aside, 0o600);
    await link(aside, path);
    return { key, file: { path, created: true } };
  } catch (e) {
    if (errorCode(e) !== "EEXIST") throw e;
    const winner = await readKeyFile(path);
    if (!winner) throw new Error(`${path} disappeared while it was being created`, { cause: e });
    return { key: winner, file: { path, created: false } };
  } finally {
    await unlink(aside);
  }
}

/** The key in `path`; undefined when there is no such file. */
async function readKeyFile(path: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    if (errorCode(e) === "ENOENT") return undefined;
    throw e;
  }
  const key = decodeMasterKey(text);
  if (!key) throw new Error(`${path} does not hold a master key (32 bytes as base64 or 64 hex digits)`);
  // A copied or restored file may have come back readable by others.
  if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600);
  return key;
}

function errorCode(e: unknown): unknown {
  return e && typeof e === "object" ? (e as { code?: unknown }).code : undefined;
}
