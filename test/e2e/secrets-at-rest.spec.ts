import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eq, inArray } from "drizzle-orm";
import { decodeProtectedHeader, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SigningKeys } from "../../src/auth/index.js";
import { SecretBox } from "../../src/crypto/index.js";
import { loadSealedSetting, schema, settingContext } from "../../src/db/index.js";
import { clientSecretContext, sealPlaintextClientSecrets } from "../../src/db/client-secrets.js";
import { restClient } from "../support/clients.js";
import { createFreshDatabase, postgresAdminUrl } from "../support/database.js";
import { createGroup, ok, uidOf } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { postgresTemplate } from "../support/store-templates.js";

// Secrets at rest (signing keys, the settings keys, IdP client secrets) are
// sealed under the master key: the raw rows hold none of them in plain text.

const SECRET_SETTINGS = ["list.page_token_key", "login.state_key"];
const privateJwkContext = (kid: string) => `signing_keys.private_jwk:${kid}`;

/** Starts a login, so that the login cookie key exists. */
async function startLogin(server: TestServer): Promise<void> {
  const q = new URLSearchParams({ redirect: "http://127.0.0.1:4000/callback", state: "s" });
  const res = await fetch(`${server.app.urls.authUrl}/oauth?${q}`, { redirect: "manual" });
  expect(res.status).toBe(302);
  expect(res.headers.get("set-cookie")).toBeTruthy();
}

async function createProvider(server: TestServer, name: string, clientSecret: string): Promise<string> {
  const call = restClient(server.url, server.token);
  const group = uidOf(await createGroup(call, name));
  const body = { name: "sso", oidc: { issuer: "https://accounts.example.com", clientId: "platform", clientSecret } };
  return (await ok(call("POST", `/iam/v2beta1/identityProviders/${group}`, body)))["uid"] as string;
}

/** Every row that holds a secret, as stored. */
async function rawRows(server: TestServer) {
  const db = server.app.database.db;
  return {
    settings: await db.select().from(schema.settings).where(inArray(schema.settings.key, SECRET_SETTINGS)),
    signingKeys: await db.select().from(schema.signingKeys),
    providers: await db.select().from(schema.identityProviders),
  };
}

type Rows = Awaited<ReturnType<typeof rawRows>>;

/** The plaintext of every secret in `rows`, opened with the server's box (which also proves each one is sealed). */
function opened(secrets: SecretBox, rows: Rows) {
  return {
    settings: rows.settings.map((r) => {
      expect(SecretBox.isSealed(r.value), r.key).toBe(true);
      return { key: r.key, value: secrets.open(r.value, settingContext(r.key)) };
    }),
    privateJwks: rows.signingKeys.map((r) => {
      const stored = r.privateJwk as { sealed?: unknown };
      expect(Object.keys(stored)).toEqual(["sealed"]);
      expect(typeof stored.sealed === "string" && SecretBox.isSealed(stored.sealed)).toBe(true);
      return JSON.parse(secrets.open(stored.sealed as string, privateJwkContext(r.kid))) as JWK;
    }),
    clientSecrets: rows.providers.map((r) => {
      expect(SecretBox.isSealed(r.oidcClientSecret), r.uid).toBe(true);
      return { uid: r.uid, secret: secrets.open(r.oidcClientSecret, clientSecretContext(r.uid)) };
    }),
  };
}

describe("secrets at rest", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("the raw rows hold no IdP client secret, settings key or private JWK in plain text", async () => {
    const clientSecret = "idp-client-secret-at-rest";
    const uid = await createProvider(server, "sealed-org", clientSecret);
    await startLogin(server);

    const rows = await rawRows(server);
    expect(rows.settings.map((r) => r.key).sort()).toEqual(SECRET_SETTINGS);
    expect(rows.signingKeys.length).toBeGreaterThan(0);
    const plain = opened(server.app.secrets, rows);
    expect(plain.clientSecrets).toEqual([{ uid, secret: clientSecret }]);

    const dump = JSON.stringify(rows);
    expect(dump).not.toContain(clientSecret);
    for (const s of plain.settings) {
      expect(Buffer.from(s.value, "base64")).toHaveLength(32);
      expect(dump).not.toContain(s.value);
    }
    for (const jwk of plain.privateJwks) {
      expect(jwk.d).toBeTruthy();
      expect(dump).not.toContain(jwk.d);
    }
  });

  it("a sealed client secret copied to another provider's row does not open there", async () => {
    const [a, b] = [await createProvider(server, "copy-from", "secret-a"), await createProvider(server, "copy-to", "secret-b")];
    const t = schema.identityProviders;
    const [row] = await server.app.database.db.select().from(t).where(eq(t.uid, a));
    expect(() => server.app.secrets.open(row!.oidcClientSecret, clientSecretContext(b))).toThrow(/does not open/);
  });

  it("the data directory is private (0700) and holds the master key file (0600)", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "platform-private-"));
    const own = await startTestServer({ PLATFORM_DATA_DIR: dataDir });
    try {
      expect((await stat(dataDir)).mode & 0o777).toBe(0o700);
      expect((await stat(join(dataDir, "master-key"))).mode & 0o777).toBe(0o600);
    } finally {
      await own.stop();
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it("the start pass and the settings' owners re-seal plain-text rows, idempotently, on either back-end", async () => {
    await createProvider(server, "pass-org", "pass-client-secret");
    await startLogin(server);
    const db = server.app.database.db;
    const secrets = server.app.secrets;
    const plain = opened(secrets, await rawRows(server));
    for (const s of plain.settings) await db.update(schema.settings).set({ value: s.value }).where(eq(schema.settings.key, s.key));
    for (const jwk of plain.privateJwks)
      await db.update(schema.signingKeys).set({ privateJwk: jwk }).where(eq(schema.signingKeys.kid, jwk.kid!));
    for (const c of plain.clientSecrets) {
      await db.update(schema.identityProviders).set({ oidcClientSecret: c.secret }).where(eq(schema.identityProviders.uid, c.uid));
    }

    const keys = new SigningKeys(db, secrets, server.clock.now);
    expect(await keys.sealPlaintextKeys()).toBe(plain.privateJwks.length);
    expect(await sealPlaintextClientSecrets(db, secrets)).toBe(plain.clientSecrets.length);
    for (const s of plain.settings) expect(await loadSealedSetting(db, secrets, s.key, () => "unused")).toBe(s.value);
    // Nothing left to do the second time.
    expect(await keys.sealPlaintextKeys()).toBe(0);
    expect(await sealPlaintextClientSecrets(db, secrets)).toBe(0);

    const resealed = opened(secrets, await rawRows(server));
    expect(resealed.clientSecrets).toEqual(plain.clientSecrets);
    expect(resealed.settings).toEqual(expect.arrayContaining(plain.settings));
    expect(resealed.privateJwks.map((j) => j.d).sort()).toEqual(plain.privateJwks.map((j) => j.d).sort());
    expect((await restClient(server.url, server.token)("GET", "/iam/v2beta1/groups")).status).toBe(200);
  });

  // A restart on the same store: the same data directory (PGlite, the key file) and, on PostgreSQL, the same database.
  it("re-seals what an earlier version stored in plain text, and it keeps working", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "platform-legacy-"));
    const adminUrl = postgresAdminUrl();
    const shared = adminUrl ? await createFreshDatabase(adminUrl, undefined, postgresTemplate()) : undefined;
    const env = { PLATFORM_DATA_DIR: dataDir, ...(shared ? { DATABASE_URL: shared.url } : {}) };
    try {
      const before = await startTestServer(env);
      let plain: ReturnType<typeof opened>;
      let token: string;
      let pageToken: string;
      try {
        await createProvider(before, "legacy-org", "legacy-client-secret");
        await createGroup(restClient(before.url, before.token), "legacy-second");
        await startLogin(before);
        token = before.token;
        const page = await ok(restClient(before.url, token)("GET", "/iam/v2beta1/groups?pageSize=1"));
        pageToken = page["nextPageToken"] as string;
        expect(pageToken).toBeTruthy();

        // Put every secret back the way the previous version stored it.
        plain = opened(before.app.secrets, await rawRows(before));
        const db = before.app.database.db;
        for (const s of plain.settings) await db.update(schema.settings).set({ value: s.value }).where(eq(schema.settings.key, s.key));
        for (const jwk of plain.privateJwks)
          await db.update(schema.signingKeys).set({ privateJwk: jwk }).where(eq(schema.signingKeys.kid, jwk.kid!));
        for (const c of plain.clientSecrets) {
          await db.update(schema.identityProviders).set({ oidcClientSecret: c.secret }).where(eq(schema.identityProviders.uid, c.uid));
        }
        expect(JSON.stringify(await rawRows(before))).toContain("legacy-client-secret");
      } finally {
        await before.stop();
      }

      const after = await startTestServer(env);
      try {
        // The signing key (read in plain text, then sealed) still signs: the new admin token uses it.
        expect(decodeProtectedHeader(after.token).kid).toBe(decodeProtectedHeader(token).kid);
        // A page token made with the HMAC key read in plain text still works.
        const call = restClient(after.url, after.token);
        const next = await ok(call("GET", `/iam/v2beta1/groups?pageSize=1&pageToken=${encodeURIComponent(pageToken)}`));
        expect((next["groups"] as unknown[]).length).toBe(1);
        await startLogin(after);

        // Everything is sealed again, with the same plaintext.
        const resealed = opened(after.app.secrets, await rawRows(after));
        const byKey = <T extends { key: string }>(xs: T[]) => [...xs].sort((x, y) => x.key.localeCompare(y.key));
        expect(byKey(resealed.settings)).toEqual(byKey(plain.settings));
        expect(resealed.clientSecrets).toEqual(plain.clientSecrets);
        expect(resealed.privateJwks.map((j) => j.d).sort()).toEqual(plain.privateJwks.map((j) => j.d).sort());
        expect(JSON.stringify(await rawRows(after))).not.toContain("legacy-client-secret");
      } finally {
        await after.stop();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      await shared?.drop();
    }
  });
});
