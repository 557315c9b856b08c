import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { eq, type SQL } from "drizzle-orm";
import {
  BatchCreateRoleBindingsResponseSchema,
  RoleBindingSchema,
  RoleBindingsService,
  type CreateRoleBindingRequest,
  type ListRoleBindingsRequest,
  type RoleBinding,
} from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { newChildUid, parentOf, schema, type Executor } from "../../db/index.js";
import { assertWithinCeiling, callerGrants, type Grants } from "../../authz/index.js";
import { invalidArgument, notFound } from "../../errors/index.js";
import type { ChangeCall } from "../../events/index.js";
import type { ExtraFilters } from "../../list/index.js";
import type { ServiceContext } from "../context.js";
import { requireField, type ResourceStore } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { hydrateRoleBindings, storedBindingMapping } from "./role-binding-hydration.js";
import { assertIdentityBindable, assertRoleVisible, lockGroup } from "./reference-checks.js";

const MAX_BATCH = 200;

const t = schema.roleBindings;

// The stored row as a message carries only what Update may patch (role_uid);
// every response is hydrated by hydrateRoleBindings instead. Bindings are
// not a group's contents: they are its access policy and go with it.
export const roleBindingResource = defineResource({
  kind: "role binding",
  table: t,
  ...storedBindingMapping,
  list: { sortable: { create_time: t.createTime } },
  listFilters: bindingFilters,
  decorate: (db, page) =>
    hydrateRoleBindings(
      db,
      page.map((b) => b.uid),
    ),
  duplicate: () => "the identity already has this role at this group",
  missingReference: "group",
});

/** The identity, group and role filters: exact uids. */
function bindingFilters(req: ListRoleBindingsRequest): ExtraFilters {
  const where: SQL[] = [];
  if (req.identity) where.push(eq(t.identityUid, req.identity));
  if (req.group) where.push(eq(t.parentUid, req.group));
  if (req.role) where.push(eq(t.roleUid, req.role));
  return { where, key: { identity: req.identity, group: req.group, role: req.role } };
}

async function hydrateOne(db: Executor, uid: string): Promise<RoleBinding> {
  const [binding] = await hydrateRoleBindings(db, [uid]);
  if (!binding) throw notFound("role binding", uid);
  return binding;
}

export function roleBindingsService(ctx: ServiceContext): ServiceImpl<typeof RoleBindingsService> {
  return resourceService(RoleBindingsService, roleBindingResource, ctx, (store) => written(ctx, store));
}

function written(
  ctx: ServiceContext,
  store: ResourceStore<typeof t, typeof RoleBindingSchema>,
): Partial<ServiceImpl<typeof RoleBindingsService>> {
  /**
   * Creates bindings at `parent`, all or none. The group, each identity and
   * each role are locked while checked, so none can be deleted before the
   * insert commits; `field` names request n's fields in errors.
   */
  const createAll = (
    grants: Grants,
    call: ChangeCall,
    parent: string,
    requests: CreateRoleBindingRequest[],
    field: (n: number, name: string) => string,
  ) =>
    ctx.db.transaction(async (tx) => {
      await lockGroup(tx, parent);
      const uids: string[] = [];
      for (const [n, req] of requests.entries()) {
        const identity = await assertIdentityBindable(tx, grants, parent, req.identityUid, field(n, "identity_uid"));
        const role = await assertRoleVisible(tx, parent, req.roleUid, field(n, "role_uid"));
        assertWithinCeiling(grants, role.capabilities, parent, `binding role ${role.uid}`);
        const values = { uid: newChildUid(parent), parentUid: parent, identityUid: identity.uid };
        uids.push((await store.create(create(RoleBindingSchema, { roleUid: role.uid }), values, call, tx)).uid);
      }
      return hydrateRoleBindings(tx, uids);
    });

  return {
    // One query: the row with its identity, group and role.
    getRoleBinding: (req) => hydrateOne(ctx.db, requireField(req.uid, "uid")),

    async createRoleBinding(req, context) {
      const [binding] = await createAll(callerGrants(context), context, requireField(req.parent, "parent"), [req], (_, name) => name);
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
      const roleBindings = await createAll(callerGrants(context), context, parent, req.requests, (n, name) => `requests[${n}].${name}`);
      return create(BatchCreateRoleBindingsResponseSchema, { roleBindings });
    },

    async updateRoleBinding(req, context) {
      const grants = callerGrants(context);
      const uid = requireField(req.roleBinding?.uid ?? "", "role_binding.uid");
      // A binding's uid is `<group uid>/<16 hex>`: the new role must be visible from that group.
      await store.update(uid, req.roleBinding ?? create(RoleBindingSchema), req.updateMask, context, async (tx, next) => {
        const role = await assertRoleVisible(tx, parentOf(uid), next.roleUid ?? "", "role_uid");
        assertWithinCeiling(grants, role.capabilities, parentOf(uid), `binding role ${role.uid}`);
        return {};
      });
      return hydrateOne(ctx.db, uid);
    },
  };
}
