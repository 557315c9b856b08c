import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { count, eq } from "drizzle-orm";
import { ListRolesResponseSchema, RoleSchema, RolesService, type Role } from "../../../gen/platform/iam/v2beta1/roles_pb.js";
import { assertWithinCeiling, callerGrants, isBuiltInRole, isCapability } from "../../authz/index.js";
import { isForeignKeyViolation, schema } from "../../db/index.js";
import { alreadyExists, failedPrecondition, invalidArgument } from "../../errors/index.js";
import type { ListSource } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { ResourceStore, requireField, type ResourceMapping } from "../resource-store.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription, checkName } from "../validation.js";

const t = schema.roles;

export const rolesSource: ListSource<typeof t> = {
  table: t,
  uid: t.uid,
  parentUid: t.parentUid,
  // Custom role uids are single segments; `<parent>/<uid>` is what scopes match.
  path: t.path,
  isGroup: false,
  // Built-in roles are global: every caller who may list roles sees them.
  globalRowsVisible: true,
  name: t.name,
  sortable: { name: t.name, create_time: t.createTime, update_time: t.updateTime },
};

export const roleMapping: ResourceMapping<typeof t, typeof RoleSchema> = {
  kind: "role",
  table: t,
  uid: t.uid,
  schema: RoleSchema,
  toMessage: (row) =>
    create(RoleSchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      capabilities: row.capabilities,
      parent: row.parentUid ?? "",
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (r: Role) => {
    checkName(r.name);
    // Built-in roles are visible in every group: a custom one may not take their names.
    if (isBuiltInRole(r.name)) throw alreadyExists("role", r.name, `"${r.name}" is the name of a built-in role`);
    checkDescription(r.description);
    r.capabilities.forEach((c, i) => {
      if (!isCapability(c)) throw invalidArgument(`capabilities[${i}]`, `unknown capability "${c}"`);
    });
  },
  // Repeats collapse; the order given is kept.
  toColumns: (r) => ({ name: r.name, description: r.description, capabilities: [...new Set(r.capabilities)] }),
  duplicate: (r) => `the group already has a role named "${r.name}"`,
  missingReference: "group",
};

function refuseBuiltIn(uid: string, verb: string): void {
  if (isBuiltInRole(uid)) throw failedPrecondition("BUILT_IN_ROLE", `role ${uid} is built in and cannot be ${verb}`, uid);
}

function inUse(uid: string, what: string) {
  return failedPrecondition("RESOURCE_IN_USE", `role ${uid} is used by ${what}; delete them first`, uid);
}

export function rolesService(ctx: ServiceContext): ServiceImpl<typeof RolesService> {
  const store = new ResourceStore(ctx.db, ctx.clock, roleMapping);
  return {
    async listRoles(req, context) {
      const page = await ctx.list.list(ctx.db, rolesSource, req, context);
      return create(ListRolesResponseSchema, { ...page, roles: page.rows.map(roleMapping.toMessage) });
    },

    getRole: (req) => store.get(req.uid),

    createRole(req, context) {
      const grants = callerGrants(context);
      const parent = requireField(req.parent, "parent");
      const role = req.role ?? create(RoleSchema);
      // An unknown capability is the caller's typo, not an escalation: say so first.
      roleMapping.validate(role);
      assertWithinCeiling(grants, role.capabilities, parent, "the role");
      const uid = randomBytes(8).toString("hex");
      return store.create(role, { uid, parentUid: parent, path: `${parent}/${uid}` });
    },

    updateRole(req, context) {
      const grants = callerGrants(context);
      const uid = requireField(req.role?.uid ?? "", "role.uid");
      refuseBuiltIn(uid, "changed");
      // Bindings of the role grant its new capabilities at once: the caller must hold them where the role lives.
      return store.update(uid, req.role ?? create(RoleSchema), req.updateMask, (_tx, next) => {
        assertWithinCeiling(grants, next.capabilities, next.parent, "the role");
        return {};
      });
    },

    async deleteRole(req) {
      refuseBuiltIn(req.uid, "deleted");
      try {
        // The row lock waits for bindings being created with this role
        // (they hold it FOR KEY SHARE), so the count includes them.
        await store.delete(req.uid, async (tx) => {
          const [bound] = await tx.select({ n: count() }).from(schema.roleBindings).where(eq(schema.roleBindings.roleUid, req.uid));
          const n = bound?.n ?? 0;
          if (n > 0) throw inUse(req.uid, `${n} role binding${n === 1 ? "" : "s"}`);
        });
      } catch (e) {
        // Other references (identity providers' default role, invites) are backed by foreign keys.
        if (isForeignKeyViolation(e)) throw inUse(req.uid, "other resources");
        throw e;
      }
      return {};
    },
  };
}
