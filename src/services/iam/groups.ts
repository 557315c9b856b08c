import { create } from "@bufbuild/protobuf";
import { GroupSchema, GroupsService, type Group } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { grantRole, removeBindingsWith } from "../../bindings/index.js";
import { grantsUnchangedKey, principalKey } from "../../caller/index.js";
import { groupContents, MAX_GROUP_DEPTH, newChildUid, newRootUid, schema, uidDepth } from "../../db/index.js";
import { failedPrecondition, invalidArgument, required, unauthenticated } from "../../errors/index.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription, checkName } from "../validation.js";

const GROUP_NAME_PATTERN = /^[a-z0-9 ._-]{1,}$/;

function groupNotEmpty(uid: string, held: string[]) {
  return failedPrecondition("RESOURCE_NOT_EMPTY", `group ${uid} still holds ${held.join(", ")}; delete them first`, uid);
}

export const groupResource = defineResource({
  kind: "group",
  table: schema.groups,
  schema: GroupSchema,
  list: { isGroup: true },
  groupContent: "child groups",
  toMessage: (row) =>
    create(GroupSchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      resourceLimits: row.resourceLimits,
      verified: row.verified,
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (g: Group) => {
    // Missing is a REQUIRED violation that still states the pattern (the spec's "Errors" case).
    if (!g.name) throw required("name", `must match the pattern ${GROUP_NAME_PATTERN.source}`);
    if (!GROUP_NAME_PATTERN.test(g.name)) throw invalidArgument("name", `must match the pattern ${GROUP_NAME_PATTERN.source}`);
    checkName(g.name);
    checkDescription(g.description);
    for (const [key, limit] of Object.entries(g.resourceLimits)) {
      if (limit < 0) throw invalidArgument(`resource_limits[${key}]`, "must not be negative");
    }
  },
  toColumns: (g) => ({ name: g.name, description: g.description, resourceLimits: g.resourceLimits }),
  duplicate: (g) => `a sibling group named "${g.name}" already exists`,
  missingReference: "group",
  // The row lock orders this delete after any create that already
  // references the group; the foreign keys refuse anything later.
  beforeDelete: async (tx, row, deleting) => {
    const held = await groupContents(tx, row.uid, deleting.groupContents);
    if (held.length) throw groupNotEmpty(row.uid, held);
    // The group's access policy goes with it, each binding recorded as deleted.
    await removeBindingsWith(tx, deleting.events, deleting.call, { group: row.uid });
  },
  stillReferenced: (uid) => groupNotEmpty(uid, ["resources created while it was being deleted"]),
  example: ({ unique }) => ({ name: `group-${unique}` }),
});

export const groupsService = resourceService(GroupsService, groupResource, (store, ctx) => ({
  async createGroup(req, context) {
    const input = req.group ?? create(GroupSchema);
    // Decided by the parent's uid alone, before anything is read (docs/security.md, "Input").
    if (req.parent && uidDepth(req.parent) >= MAX_GROUP_DEPTH) {
      throw invalidArgument("parent", `is ${MAX_GROUP_DEPTH} groups deep, the most a group may be: no group can be created in it`);
    }
    if (req.parent) {
      // A child group writes its row and its event, nothing grants are read from: the caller's
      // cached grants stay (docs/design.md, "Tokens and access"), saving their reload.
      context.values.set(grantsUnchangedKey, true);
      return store.create(input, { uid: newChildUid(req.parent), parentUid: req.parent }, context);
    }
    // A new organization: its creator becomes its owner in the same transaction.
    const creator = context.values.get(principalKey);
    if (!creator) throw unauthenticated("missing credentials");
    return ctx.db.transaction(async (tx) => {
      const group = await store.create(input, { uid: newRootUid(), parentUid: null }, context, tx);
      const owner = { identityUid: creator.identityUid, roleUid: "owner", now: ctx.clock(), actor: creator.identityUid };
      await grantRole(tx, ctx.events, group.uid, owner);
      return group;
    });
  },
}));
