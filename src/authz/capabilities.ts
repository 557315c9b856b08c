// The capability catalog (docs/design.md, "Tokens and access"): what roles may grant, and what the
// built-in roles grant. Capabilities are named `<resource>.<verb>`.

const CRUD = ["list", "create", "update", "delete"] as const;

function crud(resource: string, verbs: readonly string[] = CRUD): string[] {
  return verbs.map((v) => `${resource}.${v}`);
}

const IAM_RESOURCES = ["groups", "identity", "identity_providers", "account_associations", "roles", "role_bindings"];

/** Every capability a role may hold. */
export const CAPABILITIES: readonly string[] = [
  ...IAM_RESOURCES.flatMap((r) => crud(r)),
  ...crud("group_invites", ["list", "create", "delete"]),
  ...crud("repo"),
  "repo.blobs.get",
  ...crud("tag"),
  ...crud("advisories"),
];

const KNOWN = new Set(CAPABILITIES);

export function isCapability(name: string): boolean {
  return KNOWN.has(name);
}

const LISTS = CAPABILITIES.filter((c) => c.endsWith(".list"));
const IAM_WRITES = [...IAM_RESOURCES, "group_invites"].flatMap((r) =>
  CAPABILITIES.filter((c) => c.startsWith(`${r}.`) && !c.endsWith(".list")),
);
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
    capabilities: [...new Set([...editor, ...IAM_WRITES, "repo.blobs.get", ...crud("advisories", ["create", "update", "delete"])])],
  },
  { uid: "registry.pull", name: "registry.pull", description: "Pull images: list groups, repositories and tags, read blobs.", capabilities: PULL },
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
