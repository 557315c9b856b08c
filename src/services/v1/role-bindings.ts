import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { RoleBindingSchema, RoleBindingsService, type RoleBinding } from "../../../gen/platform/iam/v1/role_bindings_pb.js";
import { RoleBindingsService as V2RoleBindingsService, type RoleBinding as V2RoleBinding } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { invalidArgument } from "../../errors/index.js";
import type { ServiceContext } from "../context.js";
import { roleBindingsService } from "../iam/role-bindings.js";
import { inProcess } from "./in-process.js";
import { listAll } from "./list-all.js";
import { REPLACE_ALL, withV1Fields } from "./shape.js";

/** v2 request fields as v1 names them in errors. */
const V1_FIELDS = { identity_uid: "identity", role_uid: "role" };

// v1 shows the hydrated references as ids; a binding has no update time.
const toV1 = (b: V2RoleBinding): RoleBinding =>
  create(RoleBindingSchema, { id: b.uid, identity: b.identity?.uid, group: b.group?.uid, role: b.role?.uid, createdAt: b.createTime });

export function v1RoleBindingsService(ctx: ServiceContext): ServiceImpl<typeof RoleBindingsService> {
  const v2 = inProcess(V2RoleBindingsService, roleBindingsService(ctx));
  return {
    listRoleBindings: (req, context) =>
      listAll(
        req,
        (page) => v2.listRoleBindings({ ...page, identity: req.identity, group: req.group, role: req.role }, context),
        (res) => res.roleBindings.map(toV1),
      ),

    async createRoleBinding(req, context) {
      const b = req.roleBinding ?? create(RoleBindingSchema);
      return toV1(await withV1Fields(v2.createRoleBinding({ parent: req.parent, identityUid: b.identity, roleUid: b.role }, context), V1_FIELDS));
    },

    // The identity and group are fixed at creation; the role is what a binding's update replaces.
    async updateRoleBinding(req, context) {
      const b = req.roleBinding ?? create(RoleBindingSchema);
      if (b.identity) {
        const current = await v2.getRoleBinding({ uid: b.id }, context);
        if (current.identity?.uid !== b.identity) {
          throw invalidArgument("identity", "is fixed at creation; delete the binding and create another one");
        }
      }
      const update = v2.updateRoleBinding({ roleBinding: { uid: b.id, roleUid: b.role }, updateMask: REPLACE_ALL }, context);
      return toV1(await withV1Fields(update, V1_FIELDS));
    },

    deleteRoleBinding: (req, context) => v2.deleteRoleBinding({ uid: req.id }, context),
  };
}
