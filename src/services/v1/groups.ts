import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { GroupSchema, GroupsService, type Group, type ResourceLimits } from "../../../gen/platform/iam/v1/groups_pb.js";
import { GroupsService as V2GroupsService, type Group as V2Group } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import type { ServiceContext } from "../context.js";
import { groupsService } from "../iam/groups.js";
import { inProcess } from "./in-process.js";
import { listAll } from "./list-all.js";
import { REPLACE_ALL, v1Record } from "./shape.js";

/** The v2 resource_limits keys that v1 shows as integer fields. */
const LIMIT_KEYS = ["clusters", "idps", "repositories"] as const;

function toV1(g: V2Group): Group {
  const limits = Object.fromEntries(LIMIT_KEYS.map((k) => [k, g.resourceLimits[k] ?? 0]));
  return create(GroupSchema, { ...v1Record(g), name: g.name, description: g.description, resourceLimits: limits, verified: g.verified });
}

// Zero is proto3's "not set": it leaves no map entry, so a group written by
// v1 with no limits reads `{}` in v2 like one created there. An update
// replaces the whole map: v2 keys other than these three are dropped.
function limitsToV2(limits: ResourceLimits | undefined): Record<string, number> {
  return Object.fromEntries(LIMIT_KEYS.map((k) => [k, limits?.[k] ?? 0]).filter(([, n]) => n !== 0));
}

// The uid is ignored on create, like any identifier.
const toV2 = (g = create(GroupSchema)) => ({ uid: g.id, name: g.name, description: g.description, resourceLimits: limitsToV2(g.resourceLimits) });

export function v1GroupsService(ctx: ServiceContext): ServiceImpl<typeof GroupsService> {
  const v2 = inProcess(V2GroupsService, groupsService(ctx));
  return {
    listGroups: (req, context) => listAll(req, (page) => v2.listGroups({ ...page, name: req.name }, context), (res) => res.groups.map(toV1)),
    createGroup: async (req, context) => toV1(await v2.createGroup({ parent: req.parent, group: toV2(req.group) }, context)),
    updateGroup: async (req, context) => toV1(await v2.updateGroup({ group: toV2(req.group), updateMask: REPLACE_ALL }, context)),
    deleteGroup: (req, context) => v2.deleteGroup({ uid: req.id }, context),
  };
}
