// The capability catalog (docs/design.md, "Tokens and access"): what roles may grant, and what the
// built-in roles grant. Capabilities are named `<resource>.<verb>`. The catalog is what the
// protos declare (gen/api-index.ts) plus UNDECLARED, so a new resource needs no edit here.
import { DECLARED_CAPABILITIES } from "../../gen/api-index.js";

const CRUD = ["list", "create", "update", "delete"] as const;

function crud(resource: string, verbs: readonly string[] = CRUD): string[] {
  return verbs.map((v) => `${resource}.${v}`);
}

/** Capabilities no RPC declares that roles may still hold. */
export const UNDECLARED: readonly string[] = [
  "repo.blobs.get", // checked by the image registry on a pull, not by an RPC (registry.pull grants it)
  "advisories.update", // no RPC updates advisories, but the catalog always had it: stored roles may hold it
  "advisories.delete", // likewise for deleting, so no stored role becomes invalid
];

// The order of the catalog, which built-in roles' capabilities (stored and served) follow: the
// resources in the order the hand-written catalog had, so existing rows and answers keep theirs;
// any other resource after them, alphabetically. Within a resource: CRUD, then other verbs.
const RESOURCE_ORDER = [
  "groups",
  "identity",
  "identity_providers",
  "account_associations",
  "roles",
  "role_bindings",
  "group_invites",
  "repo",
  "tag",
  "advisories",
];

function rank(order: readonly string[], name: string): number {
  const i = order.indexOf(name);
  return i < 0 ? order.length : i;
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Compares capabilities in catalog order; `repo.blobs.get` is resource `repo`, verb `blobs.get`. */
export function byCatalogOrder(a: string, b: string): number {
  const [ra = "", va = ""] = a.split(/\.(.*)/s);
  const [rb = "", vb = ""] = b.split(/\.(.*)/s);
  return rank(RESOURCE_ORDER, ra) - rank(RESOURCE_ORDER, rb) || compare(ra, rb) || rank(CRUD, va) - rank(CRUD, vb) || compare(va, vb);
}

/** Every capability a role may hold. */
export const CAPABILITIES: readonly string[] = [...new Set([...DECLARED_CAPABILITIES, ...UNDECLARED])].sort(byCatalogOrder);

const KNOWN = new Set(CAPABILITIES);

export function isCapability(name: string): boolean {
  return KNOWN.has(name);
}

const LISTS = CAPABILITIES.filter((c) => c.endsWith(".list"));
const PULL = ["groups.list", "repo.list", "tag.list", "repo.blobs.get"];

export interface BuiltInRole {
  uid: string;
  name: string;
  description: string;
  capabilities: string[];
}

const viewer = LISTS;
const editor = [...viewer, ...crud("repo", ["create", "update", "delete"]), ...crud("tag", ["create", "update", "delete"])];

/**
 * The built-in roles: global, with single-segment uids equal to their names.
 * `owner` also holds the advisory writes; since advisories are global, those
 * RPCs are declared at the root, so only an owner bound at the root (a
 * platform administrator) imports OSV documents.
 */
export const BUILT_IN_ROLES: readonly BuiltInRole[] = [
  { uid: "viewer", name: "viewer", description: "Read access to everything: every list and get.", capabilities: viewer },
  { uid: "editor", name: "editor", description: "Viewer, plus managing repositories and tags.", capabilities: editor },
  {
    uid: "owner",
    name: "owner",
    description: "Everything: editor plus every IAM change and advisories.",
    // Every capability, editor's first: the same list, in the same order, as when it was spelled out.
    capabilities: [...new Set([...editor, ...CAPABILITIES])],
  },
  {
    uid: "registry.pull",
    name: "registry.pull",
    description: "Pull images: list groups, repositories and tags, read blobs.",
    capabilities: PULL,
  },
  {
    uid: "registry.push",
    name: "registry.push",
    description: "Pull and push images: registry.pull plus every repository and tag change.",
    capabilities: [...new Set([...PULL, ...crud("repo"), ...crud("tag")])],
  },
];

export function isBuiltInRole(uid: string): boolean {
  return BUILT_IN_ROLES.some((r) => r.uid === uid);
}
