import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { eq } from "drizzle-orm";
import { decodeProtectedHeader, importX509, jwtVerify, SignJWT } from "jose";
import { beforeEach, describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { SecretBox } from "../crypto/index.js";
import { schema, settingContext, type DatabaseHandle } from "../db/index.js";
import { DEFAULT_REGISTRY_ROTATE_AFTER_MS } from "./key-rotation.js";
import {
  REGISTRY_CERTIFICATE_CN,
  REGISTRY_CLOCK_SKEW_MS,
  REGISTRY_SIGNING_KEYS_SETTING,
  RegistryKeys,
  RegistryKeysError,
  type RegistrySigningKey,
} from "./registry-keys.js";

// The registry's signing keys and their certificate bundle (docs/design.md, "The image registry").

const run = promisify(execFile);
let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
const secrets = new SecretBox(Buffer.alloc(32, 7));
const context = settingContext(REGISTRY_SIGNING_KEYS_SETTING);
const DAY = 24 * 60 * 60 * 1000;
const TTL = 300 * 1000;

let now = 0;
const clock = () => new Date(now);
const keysFor = (rotateAfterMs?: number) =>
  new RegistryKeys({ db: handle.db, secrets, clock, ...(rotateAfterMs === undefined ? {} : { rotateAfterMs }) });

beforeEach(async () => {
  now = Date.now();
  await handle.db.delete(schema.settings).where(eq(schema.settings.key, REGISTRY_SIGNING_KEYS_SETTING));
});

async function stored(): Promise<string | undefined> {
  const [row] = await handle.db.select().from(schema.settings).where(eq(schema.settings.key, REGISTRY_SIGNING_KEYS_SETTING));
  return row?.value;
}

async function store(value: string): Promise<void> {
  await handle.db.update(schema.settings).set({ value }).where(eq(schema.settings.key, REGISTRY_SIGNING_KEYS_SETTING));
}

/** The certificates of a bundle, as the registry reads it: PEM blocks, each one a certificate. */
function certificates(bundle: string): X509Certificate[] {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n/g) ?? [];
  expect(blocks.join("")).toBe(bundle);
  return blocks.map((pem) => new X509Certificate(pem));
}

const x5cCertificate = (key: RegistrySigningKey) => new X509Certificate(Buffer.from(key.x5c[0]!, "base64"));
const inBundle = (cert: X509Certificate, bundle: string) => certificates(bundle).some((c) => c.raw.equals(cert.raw));

async function signToken(key: RegistrySigningKey): Promise<string> {
  return new SignJWT({ access: [{ type: "repository", name: "g-1/app", actions: ["pull"] }] })
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: key.kid, x5c: key.x5c })
    .setIssuer("https://auth.example")
    .setAudience("registry.example")
    .setSubject("identity-1")
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(now / 1000) + 300)
    .sign(key.sign);
}

async function openssl(args: string[]): Promise<string> {
  const { stdout } = await run("openssl", args);
  return stdout;
}

describe("RegistryKeys", () => {
  it("signs tokens that verify with the public key of their x5c certificate, a certificate of the bundle", async () => {
    const keys = keysFor();
    const bundle = await keys.bundle();
    const key = await keys.current();
    const token = await signToken(key);
    const header = decodeProtectedHeader(token);
    expect(header.x5c).toEqual(key.x5c);
    expect(key.x5c).toHaveLength(1);
    // base64, not base64url: what distribution decodes.
    expect(key.x5c[0]).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    const der = Buffer.from(key.x5c[0]!, "base64");
    expect(der.toString("base64")).toBe(key.x5c[0]);
    const pem = `-----BEGIN CERTIFICATE-----\n${key.x5c[0]!.match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----\n`;
    const { payload } = await jwtVerify(token, await importX509(pem, "ES256"), { audience: "registry.example", currentDate: clock() });
    expect(payload.sub).toBe("identity-1");
    expect(inBundle(x5cCertificate(key), bundle)).toBe(true);
    // Another key's certificate does not verify it.
    const other = certificates(bundle).find((c) => !c.raw.equals(der))!;
    await expect(jwtVerify(token, await importX509(other.toString(), "ES256"), { currentDate: clock() })).rejects.toThrow();
  });

  it("makes self-signed ECDSA P-256 / SHA-256 certificates for digital signatures, valid now and for three rotation periods", async () => {
    const keys = keysFor();
    const cert = x5cCertificate(await keys.current());
    // Self-signed: its own issuer, signed by its own key (it is its own root in the bundle).
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(cert.ca).toBe(false);
    expect(cert.subject).toContain(`CN=${REGISTRY_CERTIFICATE_CN}`);
    expect(cert.subject).toContain(`OU=${(await keys.current()).kid}`);
    // Positive and minimally encoded: 16 bytes whose first is 0x40-0x7f.
    expect(cert.serialNumber).toMatch(/^[4-7][0-9A-F]{31}$/);
    const validFrom = Date.parse(cert.validFrom);
    const validTo = Date.parse(cert.validTo);
    // Whole seconds in a certificate.
    expect(validFrom).toBeLessThanOrEqual(now - REGISTRY_CLOCK_SKEW_MS);
    expect(validFrom).toBeGreaterThan(now - REGISTRY_CLOCK_SKEW_MS - 1000);
    expect(validTo).toBeGreaterThan(now + 3 * DEFAULT_REGISTRY_ROTATE_AFTER_MS - 1000);
    expect(validTo).toBeGreaterThanOrEqual(now + 2 * DEFAULT_REGISTRY_ROTATE_AFTER_MS + TTL + REGISTRY_CLOCK_SKEW_MS);
  });

  it("writes a bundle openssl parses and trusts: every certificate verifies against the bundle at the clock's time, and not after it expires", async () => {
    const keys = keysFor(DAY);
    const dir = await mkdtemp(join(tmpdir(), "registry-keys-"));
    try {
      const bundlePath = join(dir, "bundle.pem");
      const bundle = await keys.bundle();
      await writeFile(bundlePath, bundle);
      const certs = certificates(bundle);
      expect(certs).toHaveLength(2);
      expect((await openssl(["storeutl", "-noout", "-certs", bundlePath])).trim()).toMatch(/Total found: 2$/);
      const current = await keys.current();
      const leafPath = join(dir, "leaf.pem");
      await writeFile(leafPath, x5cCertificate(current).toString());
      const text = await openssl(["x509", "-noout", "-text", "-in", leafPath]);
      expect(text).toContain("Signature Algorithm: ecdsa-with-SHA256");
      expect(text).toContain("NIST CURVE: P-256");
      expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature\n/);
      expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
      const at = (ms: number) => String(Math.floor(ms / 1000));
      for (const cert of certs) {
        const path = join(dir, `${cert.serialNumber}.pem`);
        await writeFile(path, cert.toString());
        expect(await openssl(["verify", "-attime", at(now), "-CAfile", bundlePath, path])).toContain(": OK");
        const expired = run("openssl", ["verify", "-attime", at(Date.parse(cert.validTo) + 1000), "-CAfile", bundlePath, path]);
        await expect(expired).rejects.toThrow(/certificate has expired/);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps the private keys sealed at rest", async () => {
    const keys = keysFor();
    const key = await keys.current();
    const value = (await stored())!;
    expect(SecretBox.isSealed(value)).toBe(true);
    const opened = JSON.parse(secrets.open(value, context)) as { current: { privateJwk: { d: string } } };
    const d = opened.current.privateJwk.d;
    expect(d).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(value).not.toContain(d);
    expect(value).not.toContain("privateJwk");
    expect(value).not.toContain(key.kid);
    // Another context (another setting) does not open it.
    expect(() => secrets.open(value, settingContext("list.page_token_key"))).toThrow();
  });

  it("rotates with overlap: the key that becomes current was in the bundle of the period before, and a new next joins the bundle", async () => {
    const period = DAY;
    const keys = keysFor(period);
    const before = await keys.bundle();
    const first = await keys.current();
    const rotation = await keys.rotation();
    expect(rotation.currentKid).toBe(first.kid);
    expect(rotation.previousKid).toBeUndefined();
    expect(rotation.rotateTime.getTime()).toBe(now + period);
    const start = now;

    now = start + period - 1;
    expect((await keys.current()).kid).toBe(first.kid);
    expect(await keys.bundle()).toBe(before);

    now = start + period;
    const second = await keys.current();
    expect(second.kid).toBe(rotation.nextKid);
    expect(second.kid).not.toBe(first.kid);
    // The overlap the registry needs: what signs now was trusted by a registry started before.
    expect(inBundle(x5cCertificate(second), before)).toBe(true);
    const after = await keys.bundle();
    const afterCerts = certificates(after);
    expect(afterCerts).toHaveLength(3);
    const fresh = afterCerts.filter((c) => !inBundle(c, before));
    expect(fresh).toHaveLength(1);
    const next = await keys.rotation();
    expect(next).toMatchObject({
      previousKid: first.kid,
      currentKid: second.kid,
      rotateTime: new Date(now + period),
      currentSince: new Date(now),
    });
    expect(fresh[0]!.subject).toContain(`OU=${next.nextKid}`);
    // The retired key stays while tokens it signed may be valid, on either clock.
    now = start + period + TTL + REGISTRY_CLOCK_SKEW_MS - 1;
    expect(inBundle(x5cCertificate(first), await keys.bundle())).toBe(true);
    now = start + period + TTL + REGISTRY_CLOCK_SKEW_MS;
    const later = await keys.bundle();
    expect(inBundle(x5cCertificate(first), later)).toBe(false);
    expect(certificates(later)).toHaveLength(2);
    expect((await keys.rotation()).previousKid).toBeUndefined();
    expect((await keys.current()).kid).toBe(second.kid);
  });

  it("over many rotations, every key signs only after a bundle held it, and any bundle's certificates last until the next key has served", async () => {
    const period = DAY;
    const keys = keysFor(period);
    let bundle = await keys.bundle();
    let current = await keys.current();
    const seen = new Set([current.kid]);
    for (let i = 0; i < 6; i++) {
      const { nextKid, rotateTime } = await keys.rotation();
      // A registry started now with this bundle trusts current and next until next has served its period.
      for (const cert of certificates(bundle)) expect(Date.parse(cert.validFrom)).toBeLessThanOrEqual(now);
      const nextCert = certificates(bundle).find((c) => c.subject.includes(`OU=${nextKid}`))!;
      expect(Date.parse(nextCert.validTo)).toBeGreaterThanOrEqual(rotateTime.getTime() + period + TTL);
      // Called a little late each time, as a lazy replica would.
      now = rotateTime.getTime() + i * 60_000;
      const signer = await keys.current();
      expect(signer.kid).toBe(nextKid);
      expect(seen.has(signer.kid)).toBe(false);
      expect(inBundle(x5cCertificate(signer), bundle)).toBe(true);
      seen.add(signer.kid);
      current = signer;
      bundle = await keys.bundle();
    }
    expect(seen.size).toBe(7);
    expect(current.kid).toBe((await keys.rotation()).currentKid);
  });

  it("gives two replicas starting at once on one database the same keys, and the same rotation", async () => {
    const a = keysFor(DAY);
    const b = keysFor(DAY);
    const [ka, kb] = await Promise.all([a.current(), b.current()]);
    expect(ka.kid).toBe(kb.kid);
    expect(await a.bundle()).toBe(await b.bundle());
    const start = now;
    now = start + DAY;
    const [ra, rb] = await Promise.all([a.current(), b.current()]);
    expect(ra.kid).toBe(rb.kid);
    expect(ra.kid).not.toBe(ka.kid);
    expect(await a.rotation()).toEqual(await b.rotation());
    // A replica started later (a restart) reads the same set instead of making one.
    const c = keysFor(DAY);
    expect((await c.current()).kid).toBe(ra.kid);
    expect(await c.bundle()).toBe(await a.bundle());
  });

  it("gives replicas rotating at once the same bundle: the one whose write loses reads the winner's set, so no next key is lost", async () => {
    const replicas = Array.from({ length: 4 }, () => keysFor(DAY));
    await Promise.all(replicas.map((r) => r.current()));
    now += DAY;
    const bundles = await Promise.all(replicas.map((r) => r.bundle()));
    for (const bundle of bundles) expect(bundle).toBe(bundles[0]);
    const signers = await Promise.all(replicas.map((r) => r.current()));
    for (const signer of signers) expect(inBundle(x5cCertificate(signer), bundles[0]!)).toBe(true);
    expect(bundles[0]).toBe(await keysFor(DAY).bundle());
  });

  it("lets a replica that loaded the set before another rotated it find the rotation instead of making its own", async () => {
    const a = keysFor(DAY);
    const b = keysFor(DAY);
    const first = await a.current();
    expect((await b.current()).kid).toBe(first.kid);
    now += DAY;
    const rotated = await a.current();
    const raw = await stored();
    expect((await b.current()).kid).toBe(rotated.kid);
    expect(await stored()).toBe(raw);
  });

  it("re-reads the set within a minute, so a replica finds a set another one made after the setting was deleted", async () => {
    const a = keysFor(DAY);
    const old = await a.current();
    await handle.db.delete(schema.settings).where(eq(schema.settings.key, REGISTRY_SIGNING_KEYS_SETTING));
    const made = await keysFor(DAY).current();
    now += 59_999;
    expect((await a.current()).kid).toBe(old.kid);
    now += 1;
    expect((await a.current()).kid).toBe(made.kid);
  });

  it("keeps the retired key for the token lifetime it is given, plus the clock skew", async () => {
    const ttl = 60_000;
    const keys = new RegistryKeys({ db: handle.db, secrets, clock, rotateAfterMs: DAY, tokenTtlMs: ttl });
    const first = await keys.current();
    now += DAY;
    await keys.current();
    now += ttl + REGISTRY_CLOCK_SKEW_MS - 1;
    expect((await keys.rotation()).previousKid).toBe(first.kid);
    now += 1;
    expect((await keys.rotation()).previousKid).toBeUndefined();
  });

  it("rotates late (no replica asked when due) to the next key while its certificate lasts a whole period", async () => {
    const keys = keysFor(DAY);
    const before = await keys.bundle();
    const { nextKid, rotateTime } = await keys.rotation();
    now = rotateTime.getTime() + DAY - TTL - 2 * REGISTRY_CLOCK_SKEW_MS;
    const signer = await keys.current();
    expect(signer.kid).toBe(nextKid);
    expect(inBundle(x5cCertificate(signer), before)).toBe(true);
    const after = await keys.rotation();
    expect(after.rotateTime.getTime()).toBe(now + DAY);
    expect(Date.parse(x5cCertificate(signer).validTo)).toBeGreaterThanOrEqual(after.rotateTime.getTime() + TTL + REGISTRY_CLOCK_SKEW_MS);
  });

  it("starts a new set when the rotation is so late that the next key's certificate would expire while it signs", async () => {
    const keys = keysFor(DAY);
    const before = await keys.bundle();
    const first = await keys.rotation();
    now += 3 * DAY;
    const signer = await keys.current();
    expect([first.currentKid, first.nextKid]).not.toContain(signer.kid);
    expect(inBundle(x5cCertificate(signer), before)).toBe(false);
    const after = await keys.rotation();
    expect(after).toMatchObject({
      previousKid: first.currentKid,
      currentKid: signer.kid,
      currentSince: new Date(now),
      rotateTime: new Date(now + DAY),
    });
    expect(certificates(await keys.bundle())).toHaveLength(3);
  });

  it("refuses a stored set that does not open or is not a key set, and leaves it as it is", async () => {
    await keysFor().current();
    const good = (await stored())!;
    const opened = JSON.parse(secrets.open(good, context)) as Record<string, Record<string, unknown>>;
    const flipped = good.slice(0, 20) + (good[20] === "A" ? "B" : "A") + good.slice(21);
    const withoutCurrent = { next: opened.next };
    const badTimes = { ...opened, current: { ...opened.current, rotateTime: "soon" } };
    const badKid = { ...opened, next: { ...opened.next, kid: "x\u0000y" } };
    const badJwk = { ...opened, next: { ...opened.next, privateJwk: { kty: "RSA" } } };
    const badCert = {
      ...opened,
      next: { ...opened.next, certificatePem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n" },
    };
    const extra = { ...opened, later: opened.next };
    const cases: [string, string][] = [
      ["altered", flipped],
      ["plain text", secrets.open(good, context)],
      ["sealed for another setting", secrets.seal(secrets.open(good, context), settingContext("list.page_token_key"))],
      ["sealed under another master key", new SecretBox(Buffer.alloc(32, 8)).seal(secrets.open(good, context), context)],
      ["not JSON", secrets.seal("\u0000", context)],
      ["an array", secrets.seal("[]", context)],
      ["a string", secrets.seal('"keys"', context)],
      ["no current key", secrets.seal(JSON.stringify(withoutCurrent), context)],
      ["a time that is not one", secrets.seal(JSON.stringify(badTimes), context)],
      ["a kid with NUL", secrets.seal(JSON.stringify(badKid), context)],
      ["an RSA key", secrets.seal(JSON.stringify(badJwk), context)],
      ["a certificate that does not parse", secrets.seal(JSON.stringify(badCert), context)],
      ["an unknown field", secrets.seal(JSON.stringify(extra), context)],
      ["huge", secrets.seal(JSON.stringify({ ...opened, pad: "x".repeat(100_000) }), context)],
    ];
    for (const [what, value] of cases) {
      await store(value);
      const keys = keysFor();
      await expect(keys.current(), what).rejects.toThrow(RegistryKeysError);
      await expect(keys.bundle(), what).rejects.toThrow(RegistryKeysError);
      // Still there, unchanged: no silent new set that no registry trusts.
      expect(await stored(), what).toBe(value);
    }
    await store(good);
    await expect(keysFor().current()).resolves.toMatchObject({ kid: opened.current!.kid });
  });

  it("refuses rotation periods and token lifetimes out of bounds", () => {
    const base = { db: handle.db, secrets, clock };
    for (const rotateAfterMs of [
      Number.NaN,
      0,
      -DAY,
      1.5,
      59 * 60 * 1000,
      Number.MAX_SAFE_INTEGER,
      Infinity,
      "90" as unknown as number,
      null as unknown as number,
    ]) {
      expect(() => new RegistryKeys({ ...base, rotateAfterMs }), String(rotateAfterMs)).toThrow(RangeError);
    }
    for (const tokenTtlMs of [0, -1, 0.5, 2 * DAY, Number.NaN, "300" as unknown as number]) {
      expect(() => new RegistryKeys({ ...base, tokenTtlMs }), String(tokenTtlMs)).toThrow(RangeError);
    }
    // A token lifetime that a rotation period would not outlast.
    expect(() => new RegistryKeys({ ...base, rotateAfterMs: 60 * 60 * 1000, tokenTtlMs: 60 * 60 * 1000 })).toThrow(RangeError);
    expect(() => new RegistryKeys({ ...base, rotateAfterMs: 60 * 60 * 1000 })).not.toThrow();
  });
});
