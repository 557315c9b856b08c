export { parseRegistryPath, registryPathOf, type RegistryPath } from "./paths.js";
export { RegistryKeys, type RegistrySigner, type RegistrySigningKey } from "./registry-keys.js";
export { RegistryFiles } from "./registry-files.js";
export { writeRegistryConfig, type RegistryConfigFiles } from "./registry-config.js";
export { loadRegistryNotificationSecret, REGISTRY_NOTIFICATIONS_PATH, registryNotificationsRoute } from "./notifications.js";
export { REGISTRY_TOKEN_PATH, registryTokenRealm, registryTokenRoute } from "./token-endpoint.js";
