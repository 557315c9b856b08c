import { randomHex } from "../crypto/index.js";

/** A root group uid: 20 random bytes as 40 hex characters. */
export function newRootUid(): string {
  return randomHex(20);
}

/** A uid inside `parent`: `<parent>/<16 hex>` (8 random bytes). */
export function newChildUid(parent: string): string {
  return `${parent}/${randomHex(8)}`;
}

/** A root role binding's uid: 16 hex (8 random bytes), one segment like a root-level identity's. */
export function newRootBindingUid(): string {
  return randomHex(8);
}

/**
 * `a/b/c` → [a, a/b, a/b/c]: a group and every group above it, outermost
 * first. Each prefix is one slice of `uid` (no re-joining of segments), and
 * uids reaching here have at most MAX_UID_SEGMENTS segments.
 */
export function groupAndAncestors(uid: string): string[] {
  const out: string[] = [];
  for (let i = uid.indexOf("/"); i >= 0; i = uid.indexOf("/", i + 1)) out.push(uid.slice(0, i));
  out.push(uid);
  return out;
}

/** How many segments `uid` has (`a/b/c` → 3). */
export function uidDepth(uid: string): number {
  let n = 1;
  for (let i = uid.indexOf("/"); i >= 0; i = uid.indexOf("/", i + 1)) n++;
  return n;
}

/** The organization (root group) of a group or resource uid: its first segment. */
export function organizationOf(uid: string): string {
  return uid.split("/", 1)[0] ?? "";
}

/** The uid of the group holding `uid`, or "" for a single-segment uid. */
export function parentOf(uid: string): string {
  const i = uid.lastIndexOf("/");
  return i < 0 ? "" : uid.slice(0, i);
}

// Shapes of the uids the service hands out (docs/design.md, "Storage" / docs/security.md):
// checked before a uid reaches a query, so malformed input never costs a
// database round trip or reaches PostgreSQL.
const HEX40 = "[0-9a-f]{40}";
const HEX16 = "[0-9a-f]{16}";

/**
 * The deepest a group may be: an organization and 15 levels of groups below
 * it (docs/security.md, "Input", says why and what it bounds).
 */
export const MAX_GROUP_DEPTH = 16;
/** The most segments any uid has: a tag, held by a repo held by a group at MAX_GROUP_DEPTH. */
export const MAX_UID_SEGMENTS = MAX_GROUP_DEPTH + 2;
/** The longest uid the service makes: 40 hex, then 16 hex per further segment (and a slash before each). */
export const MAX_UID_LENGTH = 40 + (MAX_UID_SEGMENTS - 1) * 17;
// Segments below the root, as regular-expression bounds.
const GROUP_BELOW = `{0,${MAX_GROUP_DEPTH - 1}}`;
const HELD_BELOW = `{1,${MAX_UID_SEGMENTS - 1}}`;
const BUILT_IN_ROLE_UIDS = "viewer|editor|owner|registry\\.pull|registry\\.push";

export const UID_SHAPES = {
  /** A group: a root (40 hex) and any child segments (16 hex each). */
  group: new RegExp(`^${HEX40}(?:/${HEX16})${GROUP_BELOW}$`),
  /** A resource held by a group: a group uid and one or more 16-hex segments. */
  child: new RegExp(`^${HEX40}(?:/${HEX16})${HELD_BELOW}$`),
  /** A role: a built-in name, or a custom role's single 16-hex segment. */
  role: new RegExp(`^(?:${BUILT_IN_ROLE_UIDS}|${HEX16})$`),
  /** An identity: held by a group, or root-level (bootstrap, people signed in) as one 16-hex segment. */
  identity: new RegExp(`^(?:${HEX16}|${HEX40}(?:/${HEX16}){1,${MAX_GROUP_DEPTH}})$`),
  /** A role binding at the root: one 16-hex segment. */
  rootRoleBinding: new RegExp(`^${HEX16}$`),
  /** An advisory: its OSV id when that is one URL-safe segment, else `osv_<32 hex>`. */
  advisory: /^(?:[A-Za-z0-9][A-Za-z0-9.-]{0,127}|osv_[0-9a-f]{32})$/,
} as const;

export type UidKind = keyof typeof UID_SHAPES;

/** Any uid the service could have made (where the kind is not known, e.g. v1 `id` filters). */
export function isAnyUid(value: string): boolean {
  return Object.values(UID_SHAPES).some((shape) => shape.test(value));
}

/**
 * Why `value` is not a uid of `kind` ("any": of any kind), or undefined when
 * it is one. Too long or too deep is said as such; the length is checked
 * before any pattern runs.
 */
export function uidProblem(value: string, kind: UidKind | "any"): string | undefined {
  if (value.length > MAX_UID_LENGTH) return `is longer than any uid (at most ${MAX_UID_LENGTH} characters)`;
  if (kind === "any" ? isAnyUid(value) : UID_SHAPES[kind].test(value)) return undefined;
  const maxDepth = kind === "group" ? MAX_GROUP_DEPTH : MAX_UID_SEGMENTS;
  if (uidDepth(value) > maxDepth) return `has more than ${maxDepth} segments, the most ${kind === "group" ? "a group" : "any"} uid has`;
  // `rootRoleBinding` → "root role binding".
  const noun = kind.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`);
  return kind === "any" ? "is not a valid uid" : `is not a valid ${noun} uid`;
}
