import { randomBytes } from "node:crypto";
import type { SecretBox } from "../crypto/index.js";
import { loadSealedSetting, type Database } from "../db/index.js";
import { writeRegistryConfig, type RegistryConfigFiles, type RegistryConfigInput } from "./registry-config.js";
import type { RegistryKeys } from "./registry-keys.js";

/** How often a running server looks for a rotation of the registry's keys (by any replica), to rewrite the bundle: within a minute. */
const BUNDLE_CHECK_MS = 60 * 1000;

export interface RegistryFilesOptions {
  db: Database;
  secrets: SecretBox;
  keys: RegistryKeys;
  /** Everything in the configuration but the upload secret and the certificates, which come from the store. */
  config: Omit<RegistryConfigInput, "httpSecret" | "bundlePem">;
  onWritten: (files: RegistryConfigFiles, rotation: Awaited<ReturnType<RegistryKeys["rotation"]>>) => void;
  onError: (e: unknown) => void;
}

/**
 * The registry's configuration and certificate bundle in the data directory (docs/design.md,
 * "The image registry"): written at start, and again whenever the keys rotated, so that a registry
 * (re)started at any time reads a bundle that holds the next key before it signs.
 */
export class RegistryFiles {
  private timer: NodeJS.Timeout | undefined;
  private lastBundle = "";
  files: RegistryConfigFiles | undefined;

  constructor(private readonly o: RegistryFilesOptions) {}

  async write(): Promise<RegistryConfigFiles> {
    const bundlePem = await this.o.keys.bundle();
    const httpSecret = await loadSealedSetting(this.o.db, this.o.secrets, "registry.http_secret", () =>
      randomBytes(32).toString("base64url"),
    );
    this.files = await writeRegistryConfig({ ...this.o.config, httpSecret, bundlePem });
    this.lastBundle = bundlePem;
    this.o.onWritten(this.files, await this.o.keys.rotation());
    return this.files;
  }

  /** Rewrites the files when the bundle changed (a rotation by this or another replica). */
  start(checkEveryMs = BUNDLE_CHECK_MS): void {
    this.timer = setInterval(() => void this.check(), checkEveryMs);
    this.timer.unref();
  }

  async check(): Promise<void> {
    try {
      // current() rotates when due, so a server nobody asks for tokens still rotates on time.
      await this.o.keys.current();
      if ((await this.o.keys.bundle()) !== this.lastBundle) await this.write();
    } catch (e) {
      this.o.onError(e);
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
