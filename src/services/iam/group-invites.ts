import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import { inArray } from "drizzle-orm";
import { GroupInviteSchema, GroupInvitesService, type GroupInvite } from "../../../gen/platform/iam/v2beta1/group_invites_pb.js";
import { RoleReferenceSchema } from "../../../gen/platform/iam/v2beta1/references_pb.js";
import { newChildUid, schema, type Executor } from "../../db/index.js";
import { assertWithinCeiling, callerGrants } from "../../authz/index.js";
import { invalidArgument } from "../../errors/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkLength } from "../validation.js";
import { inviteCodeHash } from "../../db/index.js";
import { assertRoleVisible, lockGroup } from "../../bindings/index.js";

const MAX_TTL_MS = 30 * 24 * 60 * 60 * 1000;
const MAX_EMAIL_LENGTH = 254;
// local@domain, the domain made of dot-separated DNS labels.
const EMAIL = /^[^\s@]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;
const CODE_BYTES = 32;

/** A ttl in milliseconds: more than 0, at most 30 days; INVALID_ARGUMENT on `ttl` otherwise. */
function ttlMillis(ttl: Duration | undefined): number {
  if (!ttl) throw invalidArgument("ttl", "is required");
  const ms = Number(ttl.seconds) * 1000 + Math.ceil(ttl.nanos / 1_000_000);
  if (!(ms > 0)) throw invalidArgument("ttl", "must be positive");
  if (ms > MAX_TTL_MS) throw invalidArgument("ttl", "must be at most 30 days (2592000s)");
  return ms;
}

export const groupInviteResource = defineResource({
  kind: "group invite",
  table: schema.groupInvites,
  schema: GroupInviteSchema,
  groupContent: "group invites",
  decorate: (db, invites) => withRoles(db, invites),
  // Neither the code nor the ttl can be rebuilt from a row; the role is hydrated separately.
  toMessage: (row) =>
    create(GroupInviteSchema, {
      uid: row.uid,
      roleUid: row.roleUid,
      email: row.email,
      singleUse: row.singleUse,
      expirationTime: toTimestamp(row.expirationTime),
      redeemTime: toTimestamp(row.redeemTime),
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (i) => {
    requireField(i.roleUid, "role_uid");
    if (i.email) {
      checkLength(i.email, "email", MAX_EMAIL_LENGTH);
      if (!EMAIL.test(i.email)) throw invalidArgument("email", "must be an email address (local@domain.tld)");
    }
    ttlMillis(i.ttl);
  },
  toColumns: (i) => ({ roleUid: i.roleUid, email: i.email, singleUse: i.singleUse }),
  missingReference: "group",
  example: ({ role }) => ({ roleUid: role, ttl: { seconds: 3600n } }),
});

/** Sets `role` on each invite from one query for all of them. */
async function withRoles(db: Executor, invites: GroupInvite[]): Promise<GroupInvite[]> {
  const uids = [...new Set(invites.map((i) => i.roleUid))];
  if (!uids.length) return invites;
  const roles = await db
    .select({ uid: schema.roles.uid, name: schema.roles.name, description: schema.roles.description })
    .from(schema.roles)
    .where(inArray(schema.roles.uid, uids));
  const byUid = new Map(roles.map((r) => [r.uid, r]));
  for (const invite of invites) {
    const role = byUid.get(invite.roleUid);
    if (role) invite.role = create(RoleReferenceSchema, role);
  }
  return invites;
}

export const groupInvitesService = resourceService(GroupInvitesService, groupInviteResource, (store, ctx) => ({
  // The only response that carries the code; the table keeps its hash.
  async createGroupInvite(req, context) {
    const grants = callerGrants(context);
    const group = requireField(req.parent, "parent");
    const invite = req.groupInvite ?? create(GroupInviteSchema);
    store.validate(invite);
    const code = randomBytes(CODE_BYTES).toString("base64url");
    const now = ctx.clock();
    return ctx.db.transaction(async (tx) => {
      await lockGroup(tx, group);
      const role = await assertRoleVisible(tx, group, invite.roleUid, "role_uid");
      assertWithinCeiling(grants, role.capabilities, group, `an invite with role ${role.uid}`);
      const created = await store.create(
        invite,
        {
          uid: newChildUid(group),
          parentUid: group,
          codeHash: inviteCodeHash(code),
          createTime: now,
          updateTime: now,
          expirationTime: new Date(now.getTime() + ttlMillis(invite.ttl)),
        },
        context,
        tx,
      );
      created.code = code;
      created.role = create(RoleReferenceSchema, { uid: role.uid, name: role.name, description: role.description });
      return created;
    });
  },
}));
