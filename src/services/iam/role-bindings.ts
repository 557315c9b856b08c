import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import {
  BatchCreateRoleBindingsResponseSchema,
  RoleBindingSchema,
  RoleBindingsService,
} from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { callerGrants } from "../../authz/index.js";
import { checkNewRole, createRequested, groupBindingResource, hydratedBinding, type Creating } from "../../bindings/index.js";
import { invalidArgument } from "../../errors/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";

// RoleBindingsService: its handlers wired to src/bindings/, which owns role bindings.

const MAX_BATCH = 200;

export const roleBindingResource = defineResource(groupBindingResource);

export const roleBindingsService = resourceService(RoleBindingsService, roleBindingResource, (store, ctx) => {
  const creating = (context: HandlerContext): Creating => ({ ...ctx, grants: callerGrants(context), call: context });
  return {
    getRoleBinding: (req) => hydratedBinding(ctx.db, requireField(req.uid, "uid")),

    async createRoleBinding(req, context) {
      const [binding] = await createRequested(creating(context), requireField(req.parent, "parent"), [req], (_, name) => name);
      return binding!;
    },

    async batchCreateRoleBindings(req, context) {
      const parent = requireField(req.parent, "parent");
      if (req.requests.length === 0) throw invalidArgument("requests", "is required: give at least one binding");
      if (req.requests.length > MAX_BATCH) throw invalidArgument("requests", `at most ${MAX_BATCH} bindings per batch`);
      req.requests.forEach((r, n) => {
        if (r.parent && r.parent !== parent)
          throw invalidArgument(`requests[${n}].parent`, `must be empty or equal the batch's parent ${parent}`);
      });
      const roleBindings = await createRequested(creating(context), parent, req.requests, (n, name) => `requests[${n}].${name}`);
      return create(BatchCreateRoleBindingsResponseSchema, { roleBindings });
    },

    async updateRoleBinding(req, context) {
      const grants = callerGrants(context);
      const uid = requireField(req.roleBinding?.uid ?? "", "role_binding.uid");
      const patch = req.roleBinding ?? create(RoleBindingSchema);
      return store.update(uid, patch, req.updateMask, context, async (tx, next) => {
        await checkNewRole(tx, grants, uid, next.roleUid ?? "");
        return {};
      });
    },
  };
});
