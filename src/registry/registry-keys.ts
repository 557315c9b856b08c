// The polyfill first: @peculiar/x509 loads tsyringe, which refuses to load without Reflect metadata.
// Imports are evaluated in the order written, so this one runs before @peculiar/x509 does.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";
import type { webcrypto } from "node:crypto";
import { and, eq } from "drizzle-orm";
import { calculateJwkThumbprint, exportJWK, importJWK, type CryptoKey, type JWK } from "jose";
import { SecretBox } from "../crypto/index.js";
import { DEFAULT_REGISTRY_ROTATE_AFTER_MS, MAX_REGISTRY_ROTATE_AFTER_MS, MIN_REGISTRY_ROTATE_AFTER_MS } from "./key-rotation.js";
import { schema, settingContext, type Database } from "../db/index.js";

// The key that signs registry tokens (docs/design.md, "The image registry"). The registry reads its
// certificate bundle only when it starts, so a key is written into the bundle as `next` one whole
// rotation period before it signs anything; the bundle of any moment holds the certificates of
// every key that will sign until the next rotation. The set is one sealed setting, changed by
// compare-and-set so that replicas agree on it.

/** What signs registry tokens: the key, and the `x5c` header that lets the registry trust it. */
export interface RegistrySigningKey {
  kid: string;
  sign: CryptoKey;
  /** base64 (not base64url) DER of the signing certificate, alone: it is one of the bundle's roots. */
  x5c: string[];
}

export interface RegistrySigner {
  current(): Promise<RegistrySigningKey>;
}

/** Where the key set stands, for the log. */
export interface RegistryKeyRotation {
  /** The retired key, while tokens it signed may still be valid. */
  previousKid: string | undefined;
  currentKid: string;
  /** When the current key began signing. */
  currentSince: Date;
  nextKid: string;
  /** When `next` becomes current (and a new next is made). */
  rotateTime: Date;
}

export interface RegistryKeysOptions {
  db: Database;
  secrets: SecretBox;
  clock: () => Date;
  /** How long a key signs; also how long its certificate is in the bundle before it signs. Default 90 days. */
  rotateAfterMs?: number;
  /** How long a registry token is valid: a retired key stays in the bundle this long (plus skew). Default 300 s. */
  tokenTtlMs?: number;
}

export const REGISTRY_SIGNING_KEYS_SETTING = "registry.signing_keys";
const DEFAULT_TOKEN_TTL_MS = 300 * 1000;
const MAX_TOKEN_TTL_MS = 24 * 60 * 60 * 1000;
/** Clocks of this service and the registry may differ by this much. */
export const REGISTRY_CLOCK_SKEW_MS = 5 * 60 * 1000;
/**
 * A certificate is valid for this many rotation periods from its creation: one in the bundle as
 * next, one signing, and one to spare for a rotation made late (no replica asked for a key when
 * it was due).
 */
export const REGISTRY_CERTIFICATE_PERIODS = 3;
/** The subject of every certificate (each also names its kid, so subjects differ). */
export const REGISTRY_CERTIFICATE_CN = "platform-api registry token signer";
/** A stored set is three keys of about 1.5 KB each; anything much larger is not one. */
const MAX_STORED_CHARS = 64 * 1024;
/** Another replica changing the set between our read and our write this many times in a row is a fault. */
const MAX_WRITE_ATTEMPTS = 8;
/** A replica re-reads the set at least this often (it also does at every rotation time). */
const RELOAD_INTERVAL_MS = 60 * 1000;

/** The algorithm of the registry key, named in the header of every token it signs. */
export const REGISTRY_SIGNING_ALG = "ES256";
const EC_PARAMS = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" } as const;
const KID = /^[A-Za-z0-9_-]{43}$/;

/** The stored key set is unreadable: altered, sealed under another master key, or not a key set. Never replaced silently. */
export class RegistryKeysError extends Error {}

interface StoredKey {
  kid: string;
  privateJwk: JWK;
  certificatePem: string;
  createTime: string;
}
interface StoredSet {
  previous?: StoredKey & { retireTime: string };
  current: StoredKey & { activeTime: string; rotateTime: string };
  next: StoredKey;
}

interface Loaded {
  set: StoredSet;
  loadedAt: number;
}

/**
 * The registry's signing keys (previous while needed, current, next), shared by every replica
 * through the sealed setting `registry.signing_keys`.
 */
export class RegistryKeys implements RegistrySigner {
  private readonly db: Database;
  private readonly secrets: SecretBox;
  private readonly clock: () => Date;
  private readonly rotateAfterMs: number;
  private readonly tokenTtlMs: number;
  private loaded: Loaded | undefined;
  /** The read (and write) in flight: callers arriving meanwhile share it. */
  private refreshing: Promise<Loaded> | undefined;
  /** The current key, imported, and its x5c: made once per key. */
  private signing: RegistrySigningKey | undefined;

  constructor(options: RegistryKeysOptions) {
    this.db = options.db;
    this.secrets = options.secrets;
    this.clock = options.clock;
    this.rotateAfterMs = boundedMs(
      "rotateAfterMs",
      options.rotateAfterMs === undefined ? DEFAULT_REGISTRY_ROTATE_AFTER_MS : options.rotateAfterMs,
      MIN_REGISTRY_ROTATE_AFTER_MS,
      MAX_REGISTRY_ROTATE_AFTER_MS,
    );
    this.tokenTtlMs = boundedMs(
      "tokenTtlMs",
      options.tokenTtlMs === undefined ? DEFAULT_TOKEN_TTL_MS : options.tokenTtlMs,
      1000,
      MAX_TOKEN_TTL_MS,
    );
    if (this.tokenTtlMs + REGISTRY_CLOCK_SKEW_MS >= this.rotateAfterMs)
      throw new RangeError("rotateAfterMs must exceed the token lifetime and the clock skew");
  }

  /** The key that signs now (rotating first when due). */
  async current(): Promise<RegistrySigningKey> {
    const { set } = await this.state(false);
    const key = set.current;
    if (this.signing?.kid !== key.kid) {
      const sign = (await importJWK(key.privateJwk, REGISTRY_SIGNING_ALG)) as CryptoKey;
      this.signing = { kid: key.kid, sign, x5c: [derBase64(key.certificatePem)] };
    }
    return { ...this.signing, x5c: [...this.signing.x5c] };
  }

  /**
   * The certificates the registry must trust from now until the next rotation: the previous key's
   * while tokens it signed may be valid, the current key's and the next key's. PEM, one after another.
   */
  async bundle(): Promise<string> {
    const { set } = await this.state(true);
    return [set.previous, set.current, set.next].flatMap((k) => (k ? [`${k.certificatePem.trimEnd()}\n`] : [])).join("");
  }

  /** The kids and the next rotation time, for the log. */
  async rotation(): Promise<RegistryKeyRotation> {
    const { set } = await this.state(true);
    return {
      previousKid: set.previous?.kid,
      currentKid: set.current.kid,
      currentSince: new Date(set.current.activeTime),
      nextKid: set.next.kid,
      rotateTime: new Date(set.current.rotateTime),
    };
  }

  /** The set as of now; from memory unless `fresh`, a rotation or a change to the previous key is due, or it is old. */
  private async state(fresh: boolean): Promise<Loaded> {
    const now = this.clock().getTime();
    const known = this.loaded;
    if (!fresh && known && now - known.loadedAt < RELOAD_INTERVAL_MS && now >= known.loadedAt && !this.due(known.set, now)) return known;
    this.refreshing ??= this.refresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private due(set: StoredSet, now: number): boolean {
    return now >= Date.parse(set.current.rotateTime) || (set.previous !== undefined && now >= this.dropTime(set.previous));
  }

  /** A retired key leaves the bundle once every token it signed has expired, on any clock. */
  private dropTime(previous: StoredKey & { retireTime: string }): number {
    return Date.parse(previous.retireTime) + this.tokenTtlMs + REGISTRY_CLOCK_SKEW_MS;
  }

  private async refresh(): Promise<Loaded> {
    const t = schema.settings;
    const context = settingContext(REGISTRY_SIGNING_KEYS_SETTING);
    for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
      const now = this.clock().getTime();
      const [row] = await this.db.select().from(t).where(eq(t.key, REGISTRY_SIGNING_KEYS_SETTING));
      if (!row) {
        const set = await this.startSet(now);
        const raw = this.secrets.seal(JSON.stringify(set), context);
        // Two replicas starting together: one insert wins, the other reads it on the next pass.
        const inserted = await this.db
          .insert(t)
          .values({ key: REGISTRY_SIGNING_KEYS_SETTING, value: raw })
          .onConflictDoNothing()
          .returning({ key: t.key });
        if (inserted.length > 0) return this.keep({ set, loadedAt: now });
        continue;
      }
      const set = this.parse(row.value, context);
      const advanced = await this.advance(set, now);
      if (advanced === set) return this.keep({ set, loadedAt: now });
      const raw = this.secrets.seal(JSON.stringify(advanced), context);
      // Compare-and-set: a replica that changed the set since our read wins, and we read its set.
      const updated = await this.db
        .update(t)
        .set({ value: raw })
        .where(and(eq(t.key, REGISTRY_SIGNING_KEYS_SETTING), eq(t.value, row.value)))
        .returning({ key: t.key });
      if (updated.length > 0) return this.keep({ set: advanced, loadedAt: now });
    }
    throw new Error(`the setting ${REGISTRY_SIGNING_KEYS_SETTING} changed under every one of ${MAX_WRITE_ATTEMPTS} attempts to update it`);
  }

  private keep(loaded: Loaded): Loaded {
    this.loaded = loaded;
    return loaded;
  }

  /** The set as it must be at `now`: the previous key dropped when no longer needed, a rotation when due. The same object when nothing changes. */
  private async advance(set: StoredSet, now: number): Promise<StoredSet> {
    let result = set;
    if (result.previous && now >= this.dropTime(result.previous)) {
      const { previous: _dropped, ...rest } = result;
      result = rest;
    }
    if (now < Date.parse(result.current.rotateTime)) return result;
    const { activeTime: _a, rotateTime: _r, ...retiring } = result.current;
    const previous = { ...retiring, retireTime: iso(now) };
    const next = certificateOf(result.next);
    // The next key signs for a whole period, so its certificate must last that long. It does
    // unless no replica asked for a key for about a period after the rotation was due: then
    // the set starts over, and the registry needs the new bundle (docs/design.md, "The image registry").
    const lasts =
      next.notBefore.getTime() <= now && next.notAfter.getTime() >= now + this.rotateAfterMs + this.tokenTtlMs + REGISTRY_CLOCK_SKEW_MS;
    if (!lasts) return { previous, ...(await this.startSet(now)) };
    return {
      previous,
      current: { ...result.next, activeTime: iso(now), rotateTime: iso(now + this.rotateAfterMs) },
      next: await this.newKey(now),
    };
  }

  /** A set whose current key signs at once: the first start (and a start over). */
  private async startSet(now: number): Promise<StoredSet> {
    const [current, next] = await Promise.all([this.newKey(now), this.newKey(now)]);
    return { current: { ...current, activeTime: iso(now), rotateTime: iso(now + this.rotateAfterMs) }, next };
  }

  private async newKey(now: number): Promise<StoredKey> {
    const keys = (await crypto.subtle.generateKey(EC_PARAMS, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
    const publicJwk = await exportJWK(keys.publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = { ...(await exportJWK(keys.privateKey)), kid, alg: REGISTRY_SIGNING_ALG };
    const serial = crypto.getRandomValues(new Uint8Array(16));
    // Positive and minimally encoded (Go's parser refuses anything else): the first byte is 0x40-0x7f.
    serial[0] = (serial[0]! & 0x3f) | 0x40;
    const certificate = await x509.X509CertificateGenerator.createSelfSigned(
      {
        serialNumber: Buffer.from(serial).toString("hex"),
        name: [{ CN: [REGISTRY_CERTIFICATE_CN] }, { OU: [kid] }],
        notBefore: new Date(now - REGISTRY_CLOCK_SKEW_MS),
        notAfter: new Date(now + REGISTRY_CERTIFICATE_PERIODS * this.rotateAfterMs),
        signingAlgorithm: EC_PARAMS,
        keys,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
        ],
      },
      crypto,
    );
    return { kid, privateJwk, certificatePem: certificate.toString("pem"), createTime: iso(now) };
  }

  /** Opens and checks the stored set; anything wrong throws (a new set would be trusted by no registry, and hide the fault). */
  private parse(stored: string, context: string): StoredSet {
    const fail = (why: string): never => {
      throw new RegistryKeysError(
        `the setting ${REGISTRY_SIGNING_KEYS_SETTING} is unreadable (${why}); it is left as it is: restore it, or delete it to start a new key set and restart the registry with the new bundle`,
      );
    };
    if (stored.length > MAX_STORED_CHARS) fail(`longer than ${MAX_STORED_CHARS} characters`);
    // It was sealed from the start: a plain value was not written by this service.
    if (!SecretBox.isSealed(stored)) fail("not sealed");
    let value: unknown;
    try {
      value = JSON.parse(this.secrets.open(stored, context));
    } catch (e) {
      throw new RegistryKeysError(`the setting ${REGISTRY_SIGNING_KEYS_SETTING} does not open or is not JSON: ${(e as Error).message}`, {
        cause: e,
      });
    }
    if (!isRecord(value)) return fail("not an object");
    const extra = Object.keys(value).filter((k) => !["previous", "current", "next"].includes(k));
    if (extra.length > 0) fail(`unknown fields ${extra.join(", ")}`);
    const previous = value.previous === undefined ? undefined : storedKey(value.previous, ["retireTime"], fail);
    const current = storedKey(value.current, ["activeTime", "rotateTime"], fail);
    const next = storedKey(value.next, [], fail);
    return { ...(previous ? { previous } : {}), current, next };
  }
}

function storedKey<T extends string>(value: unknown, times: T[], fail: (why: string) => never): StoredKey & Record<T, string> {
  if (!isRecord(value)) return fail("a key is not an object");
  const { kid, privateJwk, certificatePem } = value;
  if (typeof kid !== "string" || !KID.test(kid)) return fail("a kid is malformed");
  if (
    !isRecord(privateJwk) ||
    privateJwk.kty !== "EC" ||
    privateJwk.crv !== "P-256" ||
    [privateJwk.d, privateJwk.x, privateJwk.y].some((c) => typeof c !== "string")
  ) {
    return fail(`the private key ${kid} is not a P-256 JWK`);
  }
  if (typeof certificatePem !== "string") return fail(`the certificate of ${kid} is missing`);
  try {
    certificateOf({ certificatePem });
  } catch {
    return fail(`the certificate of ${kid} does not parse`);
  }
  const stamps: Record<string, string> = {};
  for (const name of ["createTime", ...times] as string[]) {
    const time = value[name];
    if (typeof time !== "string" || !Number.isFinite(Date.parse(time))) return fail(`${name} of ${kid} is not a time`);
    stamps[name] = time;
  }
  return { ...(stamps as Record<T, string>), kid, privateJwk: privateJwk as JWK, certificatePem, createTime: stamps.createTime! };
}

function certificateOf(key: { certificatePem: string }): x509.X509Certificate {
  return new x509.X509Certificate(key.certificatePem);
}

function derBase64(pem: string): string {
  return Buffer.from(certificateOf({ certificatePem: pem }).rawData).toString("base64");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function boundedMs(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be a whole number of milliseconds from ${min} to ${max}`);
  }
  return value;
}
