/**
 * Where a binding is: a group's uid, or ROOT for the bindings above every organization (docs/iam.md,
 * "Platform administrators (root role bindings)"). The root is written "" where a group path is expected (visibility,
 * grant ceiling): nothing is above it, so only root-level identities and built-in roles are
 * visible there, and only root bindings hold capabilities there.
 */
export const ROOT = "";

/** The root's name in errors about visibility. */
export const placeName = (at: string): string => (at === ROOT ? "the root" : `group ${at}`);
