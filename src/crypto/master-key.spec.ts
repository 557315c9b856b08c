import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../server/config.js";
import { decodeMasterKey, loadMasterKey, MASTER_KEY_FILE } from "./master-key.js";

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "master-key-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("decodeMasterKey", () => {
  const key = randomBytes(32);
  it("takes 32 bytes as 64 hex digits or base64 (either alphabet, padding optional, whitespace trimmed)", () => {
    for (const text of [
      key.toString("hex"),
      key.toString("hex").toUpperCase(),
      key.toString("base64"),
      key.toString("base64").replace(/=$/, ""),
      key.toString("base64url"),
      ` ${key.toString("base64")}\n`,
    ]) {
      expect(decodeMasterKey(text), text).toEqual(key);
    }
  });

  it("refuses anything else", () => {
    const b64 = key.toString("base64");
    for (const text of [
      "",
      "secret",
      randomBytes(16).toString("hex"),
      randomBytes(16).toString("base64"),
      randomBytes(33).toString("base64"),
      randomBytes(64).toString("hex"),
      key.toString("hex").slice(1),
      `${b64}=`,
      `${b64.slice(0, 42)}!=`,
    ]) {
      expect(decodeMasterKey(text), text).toBeUndefined();
    }
    // The last character's two spare bits set: it would silently decode to the same key.
    const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const nonCanonical = `${b64.slice(0, 42) + alphabet[alphabet.indexOf(b64[42]!) + 1]!}=`;
    expect(decodeMasterKey(nonCanonical)).toBeUndefined();
    // Mixed alphabets are not one base64 spelling.
    expect(decodeMasterKey("+".repeat(21) + "_".repeat(22))).toBeUndefined();
  });
});

describe("PLATFORM_MASTER_KEY", () => {
  it("is parsed by loadConfig; a malformed one is a ConfigError that does not echo the value", () => {
    const key = randomBytes(32);
    expect(loadConfig({ PLATFORM_MASTER_KEY: key.toString("base64") }).masterKey).toEqual(key);
    expect(loadConfig({ PLATFORM_MASTER_KEY: key.toString("hex") }).masterKey).toEqual(key);
    expect(loadConfig({}).masterKey).toBeUndefined();
    for (const bad of ["hunter2-not-a-key", key.toString("hex").slice(2), randomBytes(24).toString("base64")]) {
      let error: unknown;
      try {
        loadConfig({ PLATFORM_MASTER_KEY: bad });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(/PLATFORM_MASTER_KEY/);
      expect((error as Error).message).not.toContain(bad);
    }
  });
});

describe("loadMasterKey", () => {
  it("uses the configured key and writes no file", async () => {
    const key = randomBytes(32);
    const dataDir = join(root, "data");
    expect(await loadMasterKey({ configured: key, dataDir })).toEqual({ key });
    await expect(stat(join(dataDir, MASTER_KEY_FILE))).rejects.toThrow(/ENOENT/);
  });

  it("creates the key file (0600) in a new data directory (0700) at first start, then reads it back", async () => {
    const dataDir = join(root, "nested", "data");
    const first = await loadMasterKey({ configured: undefined, dataDir });
    const path = join(dataDir, MASTER_KEY_FILE);
    expect(first.file).toEqual({ path, created: true });
    expect(first.key).toHaveLength(32);
    expect(await modeOf(dataDir)).toBe(0o700);
    expect(await modeOf(path)).toBe(0o600);
    expect(decodeMasterKey(await readFile(path, "utf8"))).toEqual(first.key);

    const again = await loadMasterKey({ configured: undefined, dataDir });
    expect(again).toEqual({ key: first.key, file: { path, created: false } });
  });

  it("forces an existing world-readable data directory and key file to 0700 / 0600", async () => {
    const dataDir = join(root, "open");
    await mkdir(dataDir);
    await chmod(dataDir, 0o755);
    const key = randomBytes(32);
    await writeFile(join(dataDir, MASTER_KEY_FILE), key.toString("hex"));
    await chmod(join(dataDir, MASTER_KEY_FILE), 0o644);
    expect((await loadMasterKey({ configured: undefined, dataDir })).key).toEqual(key);
    expect(await modeOf(dataDir)).toBe(0o700);
    expect(await modeOf(join(dataDir, MASTER_KEY_FILE))).toBe(0o600);
  });

  it("refuses a key file that does not hold a key", async () => {
    await writeFile(join(root, MASTER_KEY_FILE), "not a key\n", { mode: 0o600 });
    await expect(loadMasterKey({ configured: undefined, dataDir: root })).rejects.toThrow(/does not hold a master key/);
  });

  it("concurrent first starts agree on one key", async () => {
    const dataDir = join(root, "race");
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadMasterKey({ configured: undefined, dataDir })));
    for (const k of keys) expect(k.key).toEqual(keys[0]!.key);
    expect(keys.filter((k) => k.file?.created)).toHaveLength(1);
  });
});
