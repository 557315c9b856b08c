import { UID_SHAPES } from "../db/index.js";
import { MAX_REPO_NAME_LENGTH } from "../services/registry/oci-names.js";

// How a path in the registry names a repo of the catalog (docs/design.md, "The image registry").
// `<group>/<repo name>`: the first path component is the uid of the group holding the repo with
// each `/` written as `-` (hex and dashes: a valid OCI path component, unique, and never
// changed by a rename because uids never change); everything after it is the repo's name,
// nested names (`library/nginx`) included. A repo name never contains the group component,
// so no path has two readings.

/** What a registry path names: a repo called `repoName` in the group `groupUid`. */
export interface RegistryPath {
  groupUid: string;
  repoName: string;
}

// A component of an OCI repository name, and a whole name (distribution's grammar).
const COMPONENT = "[a-z0-9]+(?:(?:\\.|_|__|-+)[a-z0-9]+)*";
const PATH_PATTERN = new RegExp(`^${COMPONENT}(?:/${COMPONENT})+$`);
/** The longest repository name distribution accepts (its own limit). */
export const MAX_REGISTRY_PATH_LENGTH = 255;

/** The registry path of repo `repoName` in group `groupUid`. */
export function registryPathOf(groupUid: string, repoName: string): string {
  return `${groupUid.replaceAll("/", "-")}/${repoName}`;
}

/** The group and repo name a registry path names, or undefined when it names none (wrong shape, too long). */
export function parseRegistryPath(path: string): RegistryPath | undefined {
  if (path.length > MAX_REGISTRY_PATH_LENGTH || !PATH_PATTERN.test(path)) return undefined;
  const slash = path.indexOf("/");
  const groupUid = path.slice(0, slash).replaceAll("-", "/");
  const repoName = path.slice(slash + 1);
  if (!UID_SHAPES.group.test(groupUid) || repoName.length > MAX_REPO_NAME_LENGTH) return undefined;
  return { groupUid, repoName };
}
