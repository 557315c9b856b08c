import type { HandlerContext } from "@connectrpc/connect";
import { GroupSchema, GroupsService, type ResourceLimits } from "../../../gen/platform/iam/v1/groups_pb.js";
import { IdentitiesService, IdentitySchema } from "../../../gen/platform/iam/v1/identities_pb.js";
import { RoleBindingSchema, RoleBindingsService, type RoleBinding } from "../../../gen/platform/iam/v1/role_bindings_pb.js";
import { RoleSchema, RolesService } from "../../../gen/platform/iam/v1/roles_pb.js";
import { RepoSchema, ReposService } from "../../../gen/platform/registry/v1/repos_pb.js";
import { TagSchema, TagsService } from "../../../gen/platform/registry/v1/tags_pb.js";
import { GroupsService as V2GroupsService, type Group as V2Group } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService as V2IdentitiesService, type Identity as V2Identity } from "../../../gen/platform/iam/v2beta1/identities_pb.js";
import {
  RoleBindingsService as V2RoleBindingsService,
  type RoleBinding as V2RoleBinding,
} from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RolesService as V2RolesService, type Role as V2Role } from "../../../gen/platform/iam/v2beta1/roles_pb.js";
import { ReposService as V2ReposService, type Repo as V2Repo } from "../../../gen/platform/registry/v2beta1/repos_pb.js";
import { TagsService as V2TagsService, type Tag as V2Tag } from "../../../gen/platform/registry/v2beta1/tags_pb.js";
import { invalidArgument } from "../../errors/index.js";
import { dottedCapabilities } from "../../capabilities/index.js";
import { groupsService } from "../iam/groups.js";
import { claimFields, claimMatchOf } from "../iam/claim-match.js";
import { identitiesService } from "../iam/identities.js";
import { roleBindingsService } from "../iam/role-bindings.js";
import { rolesService } from "../iam/roles.js";
import { reposService } from "../registry/repos.js";
import { tagsService } from "../registry/tags.js";
import { v1Row, type AnyV1Row } from "./adapter.js";
import type { InProcess } from "./in-process.js";
import { v1Record } from "./shape.js";

// The v1 services (docs/design.md, "v1 beside v2"): one row each, and the few
// mappings that differ between resources. `v1Impl` (adapter.ts) does the rest.

/** The v2 resource_limits keys that v1 shows as integer fields. */
const LIMIT_KEYS = ["clusters", "idps", "repositories"] as const;

// Zero is proto3's "not set": it leaves no map entry, so a group written by
// v1 with no limits reads `{}` in v2 like one created there. An update
// replaces the whole map: v2 keys other than these three are dropped.
function limitsToV2(limits: ResourceLimits | undefined): Record<string, number> {
  return Object.fromEntries(LIMIT_KEYS.map((k) => [k, limits?.[k] ?? 0]).filter(([, n]) => n !== 0));
}

/** The identity and group of a binding are fixed at creation; only its role is what an update replaces. */
async function identityIsFixed(b: RoleBinding, v2: InProcess<typeof V2RoleBindingsService>, context: HandlerContext): Promise<void> {
  if (!b.identity) return;
  const current = await v2.getRoleBinding({ uid: b.id }, context);
  if (current.identity?.uid !== b.identity) {
    throw invalidArgument("identity", "is fixed at creation; delete the binding and create another one");
  }
}

// Each row's toV2 ignores the id on create, like any identifier, and the
// output-only fields always.
export const V1_TABLE: readonly AnyV1Row[] = [
  v1Row({
    v1: GroupsService,
    schema: GroupSchema,
    v2: V2GroupsService,
    v2Impl: groupsService.build,
    field: "group",
    v2Items: "groups",
    listFilters: ["name"],
    toV1: (g: V2Group) => ({
      ...v1Record(g),
      name: g.name,
      description: g.description,
      resourceLimits: Object.fromEntries(LIMIT_KEYS.map((k) => [k, g.resourceLimits[k] ?? 0])),
      verified: g.verified,
    }),
    toV2: (g) => ({ uid: g.id, name: g.name, description: g.description, resourceLimits: limitsToV2(g.resourceLimits) }),
  }),
  v1Row({
    v1: IdentitiesService,
    schema: IdentitySchema,
    v2: V2IdentitiesService,
    v2Impl: identitiesService.build,
    field: "identity",
    v2Items: "identities",
    listFilters: ["name"],
    toV1: (i: V2Identity) => ({
      ...v1Record(i),
      name: i.name,
      description: i.description,
      lastSeenAt: i.lastSeenTime,
      // v1's claim_match is v2's six fields as plain fields rather than three oneofs.
      claimMatch: claimFields(i.claimMatch),
    }),
    toV2: (i) => ({ uid: i.id, name: i.name, description: i.description, claimMatch: claimMatchOf(i.claimMatch ?? {}) }),
  }),
  v1Row({
    v1: RolesService,
    schema: RoleSchema,
    v2: V2RolesService,
    v2Impl: rolesService.build,
    field: "role",
    v2Items: "roles",
    listFilters: ["name"],
    // v1 answers the dotted names it always did (docs/design.md, "Capability names").
    toV1: (r: V2Role) => ({
      ...v1Record(r),
      name: r.name,
      description: r.description,
      capabilities: dottedCapabilities(r.capabilities),
      parent: r.parent,
    }),
    toV2: (r) => ({ uid: r.id, name: r.name, description: r.description, capabilities: r.capabilities }),
  }),
  v1Row({
    v1: RoleBindingsService,
    schema: RoleBindingSchema,
    v2: V2RoleBindingsService,
    v2Impl: roleBindingsService.build,
    field: "roleBinding",
    v2Items: "roleBindings",
    listFilters: ["identity", "group", "role"],
    // v1 shows the hydrated references as ids; a binding has no update time.
    toV1: (b: V2RoleBinding) => ({ id: b.uid, identity: b.identity?.uid, group: b.group?.uid, role: b.role?.uid, createdAt: b.createTime }),
    // The update's binding: the role is all it replaces.
    toV2: (b) => ({ uid: b.id, roleUid: b.role }),
    // v2 creates from the uids at the top of the request.
    createRequest: (b, req) => ({ parent: req.parent, identityUid: b.identity, roleUid: b.role }),
    beforeUpdate: identityIsFixed,
    errorFields: { identity_uid: "identity", role_uid: "role" },
  }),
  v1Row({
    v1: ReposService,
    schema: RepoSchema,
    v2: V2ReposService,
    v2Impl: reposService.build,
    field: "repo",
    v2Items: "repos",
    listFilters: ["name"],
    toV1: (r: V2Repo) => ({ ...v1Record(r), name: r.name, description: r.description, aliases: r.aliases, activeTags: r.activeTags }),
    toV2: (r) => ({ uid: r.id, name: r.name, description: r.description, aliases: r.aliases }),
  }),
  v1Row({
    v1: TagsService,
    schema: TagSchema,
    v2: V2TagsService,
    v2Impl: tagsService.build,
    field: "tag",
    v2Items: "tags",
    listFilters: ["name"],
    toV1: (t: V2Tag) => ({ ...v1Record(t), name: t.name, digest: t.digest, deprecated: t.deprecated }),
    toV2: (t) => ({ uid: t.id, name: t.name, digest: t.digest, deprecated: t.deprecated }),
  }),
];
