import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { RoleSchema, RolesService, type Role } from "../../../gen/platform/iam/v2beta1/roles_pb.js";
import { assertWithinCeiling, callerGrants } from "../../authz/index.js";
import { countRoleBindings } from "../../bindings/index.js";
import { capabilityNamed, dottedCapabilities, enumCapabilities, isBuiltInRole } from "../../capabilities/index.js";
import { schema } from "../../db/index.js";
import { alreadyExists, failedPrecondition, invalidArgument } from "../../errors/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription, checkLength, checkName } from "../validation.js";

const t = schema.roles;

const MAX_CAPABILITY_LENGTH = 100;

function refuseBuiltIn(uid: string, verb: string): void {
  if (isBuiltInRole(uid)) throw failedPrecondition("BUILT_IN_ROLE", `role ${uid} is built in and cannot be ${verb}`, uid);
}

function inUse(uid: string, what: string) {
  return failedPrecondition("RESOURCE_IN_USE", `role ${uid} is used by ${what}; delete them first`, uid);
}

export const roleResource = defineResource({
  kind: "role",
  table: t,
  schema: RoleSchema,
  groupContent: "roles",
  list: {
    // Custom role uids are single segments; `<parent>/<uid>` is what scopes match.
    path: t.path,
    // Built-in roles are global: every caller who may list roles sees them.
    globalRowsVisible: true,
  },
  toMessage: (row) =>
    create(RoleSchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      // Answered as enum names, which every client parses (docs/design.md, "Capability names").
      capabilities: enumCapabilities(row.capabilities),
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
      // Longer than any capability in either spelling: refused without echoing it.
      checkLength(c, `capabilities[${i}]`, MAX_CAPABILITY_LENGTH);
      if (capabilityNamed(c) === undefined) throw invalidArgument(`capabilities[${i}]`, `unknown capability "${c}"`);
    });
  },
  // Stored dotted, as grants and the authorizer read them; repeats (in either spelling) collapse; the order given is kept.
  toColumns: (r) => ({ name: r.name, description: r.description, capabilities: [...new Set(dottedCapabilities(r.capabilities))] }),
  duplicate: (r) => `the group already has a role named "${r.name}"`,
  missingReference: "group",
  // The row lock waits for bindings being created with this role
  // (they hold it FOR KEY SHARE), so the count includes them.
  beforeDelete: async (tx, row) => {
    refuseBuiltIn(row.uid, "deleted");
    const n = await countRoleBindings(tx, row.uid);
    if (n > 0) throw inUse(row.uid, `${n} role binding${n === 1 ? "" : "s"}`);
  },
  // Other references (identity providers' default role, invites) are backed by foreign keys.
  stillReferenced: (uid) => inUse(uid, "other resources"),
  example: ({ unique, capabilities }) => ({ name: `role-${unique}`, capabilities: [...capabilities] }),
});

export const rolesService = resourceService(RolesService, roleResource, (store) => ({
  createRole(req, context) {
    const grants = callerGrants(context);
    const parent = requireField(req.parent, "parent");
    const role = req.role ?? create(RoleSchema);
    // An unknown capability is the caller's typo, not an escalation: say so first.
    store.validate(role);
    assertWithinCeiling(grants, dottedCapabilities(role.capabilities), parent, "the role");
    const uid = randomBytes(8).toString("hex");
    return store.create(role, { uid, parentUid: parent, path: `${parent}/${uid}` }, context);
  },

  updateRole(req, context) {
    const grants = callerGrants(context);
    const uid = requireField(req.role?.uid ?? "", "role.uid");
    refuseBuiltIn(uid, "changed");
    // Bindings of the role grant its new capabilities at once: the caller must hold them where the role lives.
    return store.update(uid, req.role ?? create(RoleSchema), req.updateMask, context, (_tx, next) => {
      assertWithinCeiling(grants, dottedCapabilities(next.capabilities), next.parent, "the role");
      return {};
    });
  },
}));
