import { RootRoleBindingsService } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { callerGrants } from "../../authz/index.js";
import { createRootRequested, hydratedRootBinding, rootBindingResource } from "../../bindings/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";

// RootRoleBindingsService (docs/iam.md, "Platform administrators (root role bindings)"): its handlers wired to
// src/bindings/, which owns role bindings; List and Delete are derived.

const rootRoleBindingResource = defineResource(rootBindingResource);

export const rootRoleBindingsService = resourceService(RootRoleBindingsService, rootRoleBindingResource, (_store, ctx) => ({
  getRootRoleBinding: (req) => hydratedRootBinding(ctx.db, requireField(req.uid, "uid")),
  createRootRoleBinding: (req, context) => createRootRequested({ ...ctx, grants: callerGrants(context), call: context }, req),
}));
