// The second spelling of a capability (docs/design.md, "Capability names"): besides our dotted
// `<resource>.<verb>`, the protobuf enum name other clients of this API write, `CAP_IAM_GROUPS_LIST`
// for `groups.list`. Roles accept both, store and authorize the dotted one, and answer the enum one.
import { CAPABILITIES } from "./capabilities.js";

// The enum name's stem for a resource, where it is not the resource's name in capitals: the IAM
// resources carry their domain, and subscriptions are named in the singular. Any other resource,
// a new one included, is `CAP_<RESOURCE>_<VERB>`: no edit here.
const STEMS: Readonly<Record<string, string>> = {
  groups: "IAM_GROUPS",
  group_invites: "IAM_GROUP_INVITES",
  identity: "IAM_IDENTITY",
  identity_providers: "IAM_IDENTITY_PROVIDERS",
  account_associations: "IAM_ACCOUNT_ASSOCIATIONS",
  roles: "IAM_ROLES",
  role_bindings: "IAM_ROLE_BINDINGS",
  subscriptions: "EVENTS_SUBSCRIPTION",
};

/** `groups.list` → `CAP_IAM_GROUPS_LIST`, `repo.blobs.get` → `CAP_REPO_BLOBS_GET`: the resource is what precedes the first dot. */
export function enumNameFor(capability: string): string {
  const dot = capability.indexOf(".");
  const resource = capability.slice(0, dot);
  const verb = capability.slice(dot + 1);
  return `CAP_${STEMS[resource] ?? resource.toUpperCase()}_${verb.toUpperCase().replaceAll(".", "_")}`;
}

/** Every capability of the catalog with its enum name, in catalog order. */
export const CAPABILITY_ENUM_NAMES: ReadonlyMap<string, string> = new Map(CAPABILITIES.map((c) => [c, enumNameFor(c)]));

const BY_ENUM_NAME: ReadonlyMap<string, string> = new Map([...CAPABILITY_ENUM_NAMES].map(([c, e]) => [e, c]));

/** The dotted capability `name` spells, in either spelling and exactly as written (case counts), or undefined. */
export function capabilityNamed(name: string): string | undefined {
  if (CAPABILITY_ENUM_NAMES.has(name)) return name;
  return BY_ENUM_NAME.get(name);
}

/** The dotted spelling of each of `names`; a name of no capability is left as it is (validation refuses it). */
export function dottedCapabilities(names: readonly string[]): string[] {
  return names.map((n) => capabilityNamed(n) ?? n);
}

/** The enum spelling of each of `capabilities` (stored, dotted); one the catalog no longer has is left as it is. */
export function enumCapabilities(capabilities: readonly string[]): string[] {
  return capabilities.map((c) => CAPABILITY_ENUM_NAMES.get(c) ?? c);
}
