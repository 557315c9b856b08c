import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { RoleSchema, RolesService, type Role } from "../../../gen/platform/iam/v1/roles_pb.js";
import { RolesService as V2RolesService, type Role as V2Role } from "../../../gen/platform/iam/v2beta1/roles_pb.js";
import type { ServiceContext } from "../context.js";
import { rolesService } from "../iam/roles.js";
import { inProcess } from "./in-process.js";
import { listAll } from "./list-all.js";
import { REPLACE_ALL, v1Record } from "./shape.js";

const toV1 = (r: V2Role): Role =>
  create(RoleSchema, { ...v1Record(r), name: r.name, description: r.description, capabilities: r.capabilities, parent: r.parent });

const toV2 = (r = create(RoleSchema)) => ({ uid: r.id, name: r.name, description: r.description, capabilities: r.capabilities });

export function v1RolesService(ctx: ServiceContext): ServiceImpl<typeof RolesService> {
  const v2 = inProcess(V2RolesService, rolesService(ctx));
  return {
    listRoles: (req, context) => listAll(req, (page) => v2.listRoles({ ...page, name: req.name }, context), (res) => res.roles.map(toV1)),
    createRole: async (req, context) => toV1(await v2.createRole({ parent: req.parent, role: toV2(req.role) }, context)),
    updateRole: async (req, context) => toV1(await v2.updateRole({ role: toV2(req.role), updateMask: REPLACE_ALL }, context)),
    deleteRole: (req, context) => v2.deleteRole({ uid: req.id }, context),
  };
}
