import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { eq, type SQL } from "drizzle-orm";
import { RoleBindingSchema, type RoleBinding } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService, type ListRootRoleBindingsRequest } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { newRootBindingUid, schema, type Executor } from "../../db/index.js";
import { assertWithinCeiling, callerGrants } from "../../authz/index.js";
import { notFound } from "../../errors/index.js";
import type { ExtraFilters } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { hydrateRootRoleBindings, storedBindingMapping } from "./role-binding-hydration.js";
import { assertIdentityVisible, assertRoleVisible } from "./reference-checks.js";

// Role bindings at the root (README: "Platform administrators"): the same
// resource as a group's role bindings, without a group. The root is written
// "" where a group path is expected (visibility, grant ceiling): nothing is
// above it, so only root-level identities and built-in roles are visible
// there, and only root bindings hold capabilities there.
const ROOT = "";

const t = schema.rootRoleBindings;

// No parentUid: the rows are global, and the method's SCOPE_ROOT declaration
// already limits the list to root capability holders. Root bindings never
// change (no Update): the store creates, finds and deletes rows; every
// response is hydrated by hydrateRootRoleBindings.
const rootBindingResource = defineResource({
  kind: "root role binding",
  table: t,
  ...storedBindingMapping,
  list: { sortable: { create_time: t.createTime } },
  listFilters: bindingFilters,
  decorate: (db, page) =>
    hydrateRootRoleBindings(
      db,
      page.map((b) => b.uid),
    ),
  duplicate: () => "the identity already has this role at the root",
});

function bindingFilters(req: ListRootRoleBindingsRequest): ExtraFilters {
  const where: SQL[] = [];
  if (req.identity) where.push(eq(t.identityUid, req.identity));
  if (req.role) where.push(eq(t.roleUid, req.role));
  // `root` keeps a group list's page token from being taken for this list's.
  return { where, key: { root: true, identity: req.identity, role: req.role } };
}

async function hydrateOne(db: Executor, uid: string): Promise<RoleBinding> {
  const [binding] = await hydrateRootRoleBindings(db, [uid]);
  if (!binding) throw notFound("root role binding", uid);
  return binding;
}

export function rootRoleBindingsService(ctx: ServiceContext): ServiceImpl<typeof RootRoleBindingsService> {
  return resourceService(RootRoleBindingsService, rootBindingResource, ctx, (store) => ({
    // One query: the row with its identity and role.
    getRootRoleBinding: (req) => hydrateOne(ctx.db, requireField(req.uid, "uid")),

    async createRootRoleBinding(req, context) {
      const grants = callerGrants(context);
      // The identity and the role are locked while checked, so neither can be deleted before the insert commits.
      const uid = await ctx.db.transaction(async (tx) => {
        const identity = await assertIdentityVisible(tx, ROOT, req.identityUid, "identity_uid");
        const role = await assertRoleVisible(tx, ROOT, req.roleUid, "role_uid");
        assertWithinCeiling(grants, role.capabilities, ROOT, `binding role ${role.uid}`);
        const values = { uid: newRootBindingUid(), identityUid: identity.uid };
        return (await store.create(create(RoleBindingSchema, { roleUid: role.uid }), values, context, tx)).uid;
      });
      return hydrateOne(ctx.db, uid);
    },
  }));
}
