import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { eq } from "drizzle-orm";
import {
  GroupSchema,
  GroupsService,
  ListGroupsResponseSchema,
  type Group,
} from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { groupContents, isForeignKeyViolation, isUniqueViolation, newChildUid, newRootUid, schema, type Executor } from "../../db/index.js";
import { alreadyExists, failedPrecondition, invalidArgument, notFound } from "../../errors/index.js";
import { applyUpdate } from "../../fieldmask/index.js";
import type { ListSource } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { toTimestamp } from "../timestamps.js";

type GroupRow = typeof schema.groups.$inferSelect;

const GROUP_NAME_PATTERN = /^[a-z0-9 ._-]{1,}$/;
const MAX_NAME_LENGTH = 200;
const MAX_DESCRIPTION_LENGTH = 4096;

export const groupsSource: ListSource<typeof schema.groups> = {
  table: schema.groups,
  uid: schema.groups.uid,
  parentUid: schema.groups.parentUid,
  isGroup: true,
  name: schema.groups.name,
  sortable: { name: schema.groups.name, create_time: schema.groups.createTime, update_time: schema.groups.updateTime },
};

function toGroup(row: GroupRow): Group {
  return create(GroupSchema, {
    uid: row.uid,
    name: row.name,
    description: row.description,
    resourceLimits: row.resourceLimits,
    verified: row.verified,
    createTime: toTimestamp(row.createTime),
    updateTime: toTimestamp(row.updateTime),
  });
}

function validateGroup(g: Group): void {
  if (!GROUP_NAME_PATTERN.test(g.name)) {
    throw invalidArgument("name", "must match the pattern ^[a-z0-9 ._-]{1,}$");
  }
  if (g.name.length > MAX_NAME_LENGTH) throw invalidArgument("name", `must be at most ${MAX_NAME_LENGTH} characters`);
  if (g.description.length > MAX_DESCRIPTION_LENGTH) {
    throw invalidArgument("description", `must be at most ${MAX_DESCRIPTION_LENGTH} characters`);
  }
}

function requireUid(uid: string, field: string): string {
  if (!uid) throw invalidArgument(field, "is required");
  return uid;
}

async function findGroup(db: Executor, uid: string, lock = false): Promise<GroupRow> {
  const query = db.select().from(schema.groups).where(eq(schema.groups.uid, uid));
  const [row] = await (lock ? query.for("update") : query);
  if (!row) throw notFound("group", uid);
  return row;
}

export function groupsService(ctx: ServiceContext): ServiceImpl<typeof GroupsService> {
  const { db } = ctx;
  return {
    async listGroups(req) {
      const page = await ctx.list.list(db, groupsSource, req);
      return create(ListGroupsResponseSchema, { ...page, groups: page.rows.map(toGroup) });
    },

    async getGroup(req) {
      return toGroup(await findGroup(db, requireUid(req.uid, "uid")));
    },

    async createGroup(req) {
      const input = req.group ?? create(GroupSchema);
      validateGroup(input);
      const now = ctx.clock();
      const uid = req.parent ? newChildUid(req.parent) : newRootUid();
      try {
        const [row] = await db
          .insert(schema.groups)
          .values({
            uid,
            parentUid: req.parent || null,
            name: input.name,
            description: input.description,
            resourceLimits: input.resourceLimits,
            createTime: now,
            updateTime: now,
          })
          .returning();
        return toGroup(row!);
      } catch (e) {
        if (isForeignKeyViolation(e)) throw notFound("group", req.parent);
        if (isUniqueViolation(e)) throw alreadyExists("group", input.name, `a group named "${input.name}" already exists in ${req.parent}`);
        throw e;
      }
    },

    async updateGroup(req) {
      const uid = requireUid(req.group?.uid ?? "", "group.uid");
      try {
        return await db.transaction(async (tx) => {
          const current = toGroup(await findGroup(tx, uid, true));
          const next = applyUpdate(GroupSchema, current, req.group ?? create(GroupSchema), req.updateMask);
          validateGroup(next);
          const [row] = await tx
            .update(schema.groups)
            .set({ name: next.name, description: next.description, resourceLimits: next.resourceLimits, updateTime: ctx.clock() })
            .where(eq(schema.groups.uid, uid))
            .returning();
          return toGroup(row!);
        });
      } catch (e) {
        if (isUniqueViolation(e)) throw alreadyExists("group", req.group?.name ?? "", "a sibling group already has that name");
        throw e;
      }
    },

    async deleteGroup(req) {
      const uid = requireUid(req.uid, "uid");
      const notEmpty = (held: string[]) =>
        failedPrecondition("RESOURCE_NOT_EMPTY", `group ${uid} still holds ${held.join(", ")}; delete them first`, uid);
      try {
        await db.transaction(async (tx) => {
          // The row lock orders this delete after any create that already
          // references the group; the foreign keys refuse anything later.
          await findGroup(tx, uid, true);
          const held = await groupContents(tx, uid);
          if (held.length) throw notEmpty(held);
          await tx.delete(schema.groups).where(eq(schema.groups.uid, uid));
        });
      } catch (e) {
        if (isForeignKeyViolation(e)) throw notEmpty(["resources created while it was being deleted"]);
        throw e;
      }
      return {};
    },
  };
}
