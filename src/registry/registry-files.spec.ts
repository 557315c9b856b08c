import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { eq, inArray } from "drizzle-orm";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { startTestServer } from "../../test/support/server.js";
import { SecretBox } from "../crypto/index.js";
import { schema, type DatabaseHandle } from "../db/index.js";
import { loadRegistryNotificationSecret } from "./notifications.js";
import { RegistryFiles } from "./registry-files.js";
import { REGISTRY_SIGNING_KEYS_SETTING, RegistryKeys } from "./registry-keys.js";

// The registry's files as the server keeps them (docs/design.md, "The image registry").

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
const secrets = new SecretBox(Buffer.alloc(32, 9));
const DAY = 24 * 60 * 60 * 1000;
let now = 0;
const clock = () => new Date(now);
const errors: unknown[] = [];

beforeEach(async () => {
  now = Date.now();
  errors.length = 0;
  await handle.db
    .delete(schema.settings)
    .where(inArray(schema.settings.key, [REGISTRY_SIGNING_KEYS_SETTING, "registry.notifications_secret", "registry.http_secret"]));
});

async function filesIn(dir: string) {
  const keys = new RegistryKeys({ db: handle.db, secrets, clock, rotateAfterMs: DAY });
  const files = new RegistryFiles({
    db: handle.db,
    secrets,
    keys,
    config: {
      dir,
      addr: "127.0.0.1:5000",
      storageDir: join(dir, "storage"),
      realm: "http://localhost:8080/registry/token",
      service: "http://localhost:8080/registry",
      issuer: "http://localhost:8080",
      notificationsUrl: "http://localhost:8080/registry/notifications",
      notificationsSecret: await loadRegistryNotificationSecret(handle.db, secrets),
    },
    onWritten: () => {},
    onError: (e) => errors.push(e),
  });
  return { keys, files };
}

const serials = (pem: string) =>
  (pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map((c) => new X509Certificate(c).serialNumber);

describe("the registry's files", () => {
  it("hold the notifications secret and an upload secret, the same from every replica, and the certificates of current and next", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "registry-files-")), "registry");
    const { files } = await filesIn(dir);
    const written = await files.write();
    const config = await readFile(written.configFile, "utf8");
    const secret = await loadRegistryNotificationSecret(handle.db, secrets);
    expect(config).toContain(`Authorization: ["Bearer ${secret}"]`);
    const [row] = await handle.db.select().from(schema.settings).where(eq(schema.settings.key, "registry.http_secret"));
    expect(row?.value).toBeDefined();
    expect(config).toContain(`secret: "${secrets.open(row!.value, "settings:registry.http_secret")}"`);
    expect(serials(await readFile(written.bundleFile, "utf8"))).toHaveLength(2);
    // A second replica writes the same secrets.
    const other = join(await mkdtemp(join(tmpdir(), "registry-files-")), "registry");
    const again = await (await filesIn(other)).files.write();
    expect(await readFile(again.configFile, "utf8")).toBe(config.replaceAll(dir, other));
  });

  it("are rewritten when the keys rotate, the bundle then holding the new next key", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "registry-files-")), "registry");
    const { files, keys } = await filesIn(dir);
    const written = await files.write();
    const before = serials(await readFile(written.bundleFile, "utf8"));
    await files.check();
    expect(serials(await readFile(written.bundleFile, "utf8"))).toEqual(before);
    now += DAY + 1000;
    await files.check();
    const after = serials(await readFile(written.bundleFile, "utf8"));
    expect(errors).toEqual([]);
    // The former next now signs; it was in the bundle before; a new next joined it.
    const current = new X509Certificate(Buffer.from((await keys.current()).x5c[0]!, "base64")).serialNumber;
    expect(before).toContain(current);
    expect(after).toContain(current);
    expect(after.filter((s) => !before.includes(s))).toHaveLength(1);
  });

  it("report a failed rewrite instead of throwing", async () => {
    const dir = join(await mkdtemp(join(tmpdir(), "registry-files-")), "registry");
    const { files } = await filesIn(dir);
    await files.write();
    now += DAY + 1000;
    // The directory became a file: the rewrite fails, the check does not throw.
    await rm(dir, { recursive: true });
    await writeFile(dir, "");
    await files.check();
    expect(errors).toHaveLength(1);
  });
});

describe("a server that cannot write the registry's files", () => {
  const stops: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const stop of stops) await stop();
  });

  it("serves without them, the token endpoint included", async () => {
    const dataDir = await mkdtemp(join(tmpdir(), "registry-files-server-"));
    // Where the directory should be, a file.
    await writeFile(join(dataDir, "registry"), "not a directory");
    const server = await startTestServer({ PLATFORM_DATA_DIR: dataDir });
    stops.push(() => server.stop());
    expect(server.app.registry.files).toBeUndefined();
    const res = await fetch(`${server.url}/registry/token?service=${encodeURIComponent(server.app.urls.registryAudience)}`, {
      headers: { authorization: `Basic ${Buffer.from(`me:${server.token}`).toString("base64")}` },
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { token?: string }).token).toMatch(/^ey/);
  });
});
