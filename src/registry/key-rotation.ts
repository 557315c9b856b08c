// How often the registry's token-signing key rotates (PLATFORM_REGISTRY_KEY_ROTATION), apart from the
// keys themselves (registry-keys.ts): the configuration reads these bounds without loading X.509.

/** Default: 90 days. */
export const DEFAULT_REGISTRY_ROTATE_AFTER_MS = 90 * 24 * 60 * 60 * 1000;
/** At least an hour. */
export const MIN_REGISTRY_ROTATE_AFTER_MS = 60 * 60 * 1000;
/** At most five years. */
export const MAX_REGISTRY_ROTATE_AFTER_MS = 5 * 365 * 24 * 60 * 60 * 1000;
