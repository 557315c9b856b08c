import { and, desc, eq, gt, isNull, sql } from "drizzle-orm";
import { exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from "jose";
import type { SecretBox } from "../crypto/index.js";
import { schema, type Database } from "../db/index.js";

export const SIGNING_ALG = "ES256";
/** A key signs for a day, then a newer one takes over. */
const ROTATE_AFTER_MS = 24 * 60 * 60 * 1000;
/** Retired keys stay published long enough for every token they signed to expire. */
const PUBLISH_FOR_MS = ROTATE_AFTER_MS + 2 * 60 * 60 * 1000;
/** An unknown kid reloads from the database at most this often (another replica may have rotated). */
const RELOAD_INTERVAL_MS = 1000;

/** How `private_jwk` holds a key sealed at rest (the jsonb column stays, so no migration). */
interface SealedJwk {
  sealed: string;
}

const privateJwkContext = (kid: string) => `signing_keys.private_jwk:${kid}`;

function isSealedJwk(stored: unknown): stored is SealedJwk {
  return typeof stored === "object" && stored !== null && typeof (stored as { sealed?: unknown }).sealed === "string";
}

interface LoadedKey {
  kid: string;
  createTime: Date;
  publicJwk: JWK;
  verify: CryptoKey;
  sign: CryptoKey;
}

/**
 * ES256 signing keys kept in the database so every replica signs and
 * verifies with the same set; rotated daily. Private halves are sealed at
 * rest (`{"sealed": "v1:…"}`); keys stored before that (a plain JWK) are
 * still read, and sealed by `sealPlaintextKeys` at start.
 */
export class SigningKeys {
  private keys = new Map<string, LoadedKey>();
  private lastReload = 0;
  /** The reload in flight: callers that arrive meanwhile wait for it instead of finding no key. */
  private reloading: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly secrets: SecretBox,
    private readonly clock: () => Date,
  ) {}

  /** Seals every private key still stored as a plain JWK; idempotent. Returns how many it sealed. */
  async sealPlaintextKeys(): Promise<number> {
    const t = schema.signingKeys;
    const plain = isNull(sql`${t.privateJwk}->>'sealed'`);
    const rows = await this.db.select({ kid: t.kid, privateJwk: t.privateJwk }).from(t).where(plain);
    let sealed = 0;
    for (const row of rows) {
      // Only while still plain: a replica starting at the same time may have sealed it already.
      const updated = await this.db
        .update(t)
        .set({ privateJwk: this.seal(row.kid, row.privateJwk as JWK) })
        .where(and(eq(t.kid, row.kid), plain))
        .returning({ kid: t.kid });
      sealed += updated.length;
    }
    return sealed;
  }

  /** The newest key, rotating first when it is older than a day. */
  async current(): Promise<LoadedKey> {
    let newest = this.newest();
    if (!newest || this.clock().getTime() - newest.createTime.getTime() > ROTATE_AFTER_MS) {
      await this.reload();
      newest = this.newest();
      if (!newest || this.clock().getTime() - newest.createTime.getTime() > ROTATE_AFTER_MS) {
        await this.generate();
        await this.reload();
        newest = this.newest();
      }
    }
    if (!newest) throw new Error("no signing key after rotation");
    return newest;
  }

  /** The verification key for a kid, or undefined when no replica made it. */
  async verificationKey(kid: string): Promise<CryptoKey | undefined> {
    const known = this.keys.get(kid);
    if (known) return known.verify;
    // A replica's first requests arrive together: all of them wait for the one reload.
    if (this.reloading) await this.reloading;
    else if (this.clock().getTime() - this.lastReload >= RELOAD_INTERVAL_MS) await this.reload();
    return this.keys.get(kid)?.verify;
  }

  /** Public keys still in use, for /.well-known/jwks.json. */
  async publicJwks(): Promise<{ keys: JWK[] }> {
    await this.current();
    return { keys: [...this.keys.values()].map((k) => k.publicJwk) };
  }

  private newest(): LoadedKey | undefined {
    let best: LoadedKey | undefined;
    for (const k of this.keys.values()) if (!best || k.createTime > best.createTime) best = k;
    return best;
  }

  private async generate(): Promise<void> {
    const { publicKey, privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const kid = crypto.randomUUID();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: SIGNING_ALG, use: "sig" };
    const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG };
    await this.db.insert(schema.signingKeys).values({ kid, publicJwk, privateJwk: this.seal(kid, privateJwk), createTime: this.clock() });
  }

  private seal(kid: string, privateJwk: JWK): SealedJwk {
    return { sealed: this.secrets.seal(JSON.stringify(privateJwk), privateJwkContext(kid)) };
  }

  private open(kid: string, stored: unknown): JWK {
    if (isSealedJwk(stored)) return JSON.parse(this.secrets.open(stored.sealed, privateJwkContext(kid))) as JWK;
    return stored as JWK;
  }

  private reload(): Promise<void> {
    this.reloading ??= this.load().finally(() => (this.reloading = undefined));
    return this.reloading;
  }

  private async load(): Promise<void> {
    this.lastReload = this.clock().getTime();
    const since = new Date(this.clock().getTime() - PUBLISH_FOR_MS);
    const rows = await this.db
      .select()
      .from(schema.signingKeys)
      .where(gt(schema.signingKeys.createTime, since))
      .orderBy(desc(schema.signingKeys.createTime));
    const next = new Map<string, LoadedKey>();
    for (const row of rows) {
      const existing = this.keys.get(row.kid);
      if (existing) {
        next.set(row.kid, existing);
        continue;
      }
      const publicJwk = row.publicJwk as JWK;
      next.set(row.kid, {
        kid: row.kid,
        createTime: row.createTime,
        publicJwk,
        verify: (await importJWK(publicJwk, SIGNING_ALG)) as CryptoKey,
        sign: (await importJWK(this.open(row.kid, row.privateJwk), SIGNING_ALG)) as CryptoKey,
      });
    }
    this.keys = next;
  }
}
