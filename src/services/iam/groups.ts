import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import { GroupSchema, GroupsService, ListGroupsResponseSchema, type Group } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { groupContents, isForeignKeyViolation, newChildUid, newRootUid, schema } from "../../db/index.js";
import { principalKey } from "../../auth/index.js";
import { grantRole } from "../../authz/grant-role.js";
import { failedPrecondition, invalidArgument, unauthenticated } from "../../errors/index.js";
import type { ListSource } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { ResourceStore, requireField, type ResourceMapping } from "../resource-store.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription, checkName } from "../validation.js";

const GROUP_NAME_PATTERN = /^[a-z0-9 ._-]{1,}$/;

export const groupsSource: ListSource<typeof schema.groups> = {
  table: schema.groups,
  uid: schema.groups.uid,
  parentUid: schema.groups.parentUid,
  isGroup: true,
  name: schema.groups.name,
  sortable: { name: schema.groups.name, create_time: schema.groups.createTime, update_time: schema.groups.updateTime },
};

export const groupMapping: ResourceMapping<typeof schema.groups, typeof GroupSchema> = {
  kind: "group",
  table: schema.groups,
  uid: schema.groups.uid,
  schema: GroupSchema,
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
    if (!GROUP_NAME_PATTERN.test(g.name)) throw invalidArgument("name", "must match the pattern ^[a-z0-9 ._-]{1,}$");
    checkName(g.name);
    checkDescription(g.description);
    for (const [key, limit] of Object.entries(g.resourceLimits)) {
      if (limit < 0) throw invalidArgument(`resource_limits[${key}]`, "must not be negative");
    }
  },
  toColumns: (g) => ({ name: g.name, description: g.description, resourceLimits: g.resourceLimits }),
  duplicate: (g) => `a sibling group named "${g.name}" already exists`,
  missingReference: "group",
};

export function groupsService(ctx: ServiceContext): ServiceImpl<typeof GroupsService> {
  const store = new ResourceStore(ctx.db, ctx.clock, groupMapping);
  return {
    async listGroups(req, context) {
      const page = await ctx.list.list(ctx.db, groupsSource, req, context);
      return create(ListGroupsResponseSchema, { ...page, groups: page.rows.map(groupMapping.toMessage) });
    },

    getGroup: (req) => store.get(req.uid),

    async createGroup(req, context) {
      const input = req.group ?? create(GroupSchema);
      if (req.parent) return store.create(input, { uid: newChildUid(req.parent), parentUid: req.parent });
      // A new organization: its creator becomes its owner in the same transaction.
      const creator = context.values.get(principalKey);
      if (!creator) throw unauthenticated("missing credentials");
      return ctx.db.transaction(async (tx) => {
        const group = await store.create(input, { uid: newRootUid(), parentUid: null }, tx);
        await grantRole(tx, group.uid, creator.identityUid, "owner", ctx.clock());
        return group;
      });
    },

    updateGroup: (req) => store.update(requireField(req.group?.uid ?? "", "group.uid"), req.group ?? create(GroupSchema), req.updateMask),

    async deleteGroup(req) {
      const notEmpty = (held: string[]) =>
        failedPrecondition("RESOURCE_NOT_EMPTY", `group ${req.uid} still holds ${held.join(", ")}; delete them first`, req.uid);
      try {
        // The row lock orders this delete after any create that already
        // references the group; the foreign keys refuse anything later.
        await store.delete(req.uid, async (tx) => {
          const held = await groupContents(tx, req.uid);
          if (held.length) throw notEmpty(held);
          // The group's access policy goes with it.
          await tx.delete(schema.roleBindings).where(eq(schema.roleBindings.parentUid, req.uid));
        });
      } catch (e) {
        if (isForeignKeyViolation(e)) throw notEmpty(["resources created while it was being deleted"]);
        throw e;
      }
      return {};
    },
  };
}
