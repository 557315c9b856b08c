export { parseRegistryPath, registryPathOf, type RegistryPath } from "./paths.js";
export { RegistryKeys, type RegistrySigner, type RegistrySigningKey } from "./registry-keys.js";
export { RegistryFiles } from "./registry-files.js";
export { writeRegistryConfig, type RegistryConfigFiles } from "./registry-config.js";
// TEMPORARY until the notifications module lands.
import { randomBytes } from "node:crypto";
import { loadSealedSetting, type Database } from "../db/index.js";
import type { SecretBox } from "../crypto/index.js";
export const loadRegistryNotificationSecret = (db: Database, secrets: SecretBox) =>
  loadSealedSetting(db, secrets, "registry.notifications_secret", () => randomBytes(32).toString("base64url"));
