import { create } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import {
  IdentityProviderSchema,
  IdentityProvidersService,
  type IdentityProvider,
} from "../../../gen/platform/iam/v2beta1/identity_providers_pb.js";
import { newChildUid, openClientSecret, parentOf, schema, sealClientSecret, type Executor } from "../../db/index.js";
import { assertWithinCeiling, callerGrants, type Grants } from "../../authz/index.js";
import { invalidArgument } from "../../errors/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription, checkLength, checkName } from "../validation.js";
import { assertRoleVisible, lockGroup } from "../../bindings/index.js";

const MAX_URL_LENGTH = 2048;
const MAX_CLIENT_FIELD_LENGTH = 1024;
const MAX_SCOPES = 50;
// RFC 6749 §3.3 scope-token.
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]{1,256}$/;
// Plain http only reaches a provider on this machine (development setups).
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** An OIDC issuer: an https URL (http for loopback hosts) without credentials, query or fragment. */
function checkIssuer(issuer: string, field: string): void {
  if (!issuer) throw invalidArgument(field, "is required");
  checkLength(issuer, field, MAX_URL_LENGTH);
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw invalidArgument(field, "must be an absolute https URL");
  }
  const secure = url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname));
  if (!secure) throw invalidArgument(field, "must be an https URL (http is allowed only for localhost and 127.0.0.1)");
  if (url.username || url.password || url.search || url.hash) {
    throw invalidArgument(field, "must not carry credentials, a query or a fragment");
  }
}

function checkOidc(p: IdentityProvider): void {
  const oidc = p.oidc;
  if (!oidc) throw invalidArgument("oidc", "is required");
  checkIssuer(oidc.issuer, "oidc.issuer");
  if (!oidc.clientId) throw invalidArgument("oidc.client_id", "is required");
  checkLength(oidc.clientId, "oidc.client_id", MAX_CLIENT_FIELD_LENGTH);
  checkLength(oidc.clientSecret ?? "", "oidc.client_secret", MAX_CLIENT_FIELD_LENGTH);
  if (oidc.additionalScopes.length > MAX_SCOPES) {
    throw invalidArgument("oidc.additional_scopes", `must have at most ${MAX_SCOPES} entries`);
  }
  oidc.additionalScopes.forEach((scope, i) => {
    if (!SCOPE_TOKEN.test(scope))
      throw invalidArgument(`oidc.additional_scopes[${i}]`, "must be an OAuth scope: printable, no spaces, quotes or backslashes");
  });
}

/**
 * Messages built from rows carry the client secret (opened), so that updates
 * keep or replace it by the usual mask rules; the call pipeline drops it
 * (and every other INPUT_ONLY field) from every response. Columns
 * hold it sealed for the provider's uid, so messages written must carry it.
 */
export const identityProviderResource = defineResource({
  kind: "identity provider",
  table: schema.identityProviders,
  schema: IdentityProviderSchema,
  groupContent: "identity providers",
  toMessage: (row, { secrets }) =>
    create(IdentityProviderSchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      defaultRole: row.defaultRoleUid ?? "",
      oidc: {
        issuer: row.oidcIssuer,
        clientId: row.oidcClientId,
        ...(row.oidcClientSecret ? { clientSecret: openClientSecret(secrets, row.uid, row.oidcClientSecret) } : {}),
        additionalScopes: row.oidcAdditionalScopes,
      },
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (p) => {
    checkName(p.name);
    checkDescription(p.description);
    checkOidc(p);
  },
  toColumns: (p, { secrets }) => ({
    name: p.name,
    description: p.description,
    defaultRoleUid: p.defaultRole || null,
    oidcIssuer: p.oidc?.issuer ?? "",
    oidcClientId: p.oidc?.clientId ?? "",
    oidcClientSecret: sealClientSecret(secrets, p.uid, p.oidc?.clientSecret ?? ""),
    oidcAdditionalScopes: p.oidc?.additionalScopes ?? [],
  }),
  duplicate: (p) => `an identity provider named "${p.name}" already exists in the group`,
  missingReference: "group",
  example: ({ unique, role }) => ({
    name: `sso-${unique}`,
    defaultRole: role,
    oidc: { issuer: "https://accounts.example.com", clientId: "platform" },
  }),
});

/**
 * The default role, when one is set, must be visible from the provider's
 * group, and within the caller's grant ceiling there: whoever signs in
 * through the provider gets it, so managing the provider hands it out.
 */
async function checkDefaultRole(db: Executor, grants: Grants, groupUid: string, p: IdentityProvider): Promise<void> {
  if (!p.defaultRole) return;
  const role = await assertRoleVisible(db, groupUid, p.defaultRole, "default_role");
  assertWithinCeiling(grants, role.capabilities, groupUid, `default role ${role.uid}`);
}

/** Whether an update names the client secret: in its mask, or (without one) in its body. */
function secretGiven(patch: IdentityProvider, mask: FieldMask | undefined): boolean {
  const paths = mask?.paths ?? [];
  if (!paths.length) return patch.oidc?.clientSecret !== undefined;
  return paths.some((p) => ["*", "oidc", "oidc.client_secret", "oidc.clientSecret"].includes(p));
}

export const identityProvidersService = resourceService(IdentityProvidersService, identityProviderResource, (store, ctx) => ({
  async createIdentityProvider(req, context) {
    const grants = callerGrants(context);
    const group = requireField(req.parent, "parent");
    const provider = req.identityProvider ?? create(IdentityProviderSchema);
    store.validate(provider);
    const created = await ctx.db.transaction(async (tx) => {
      await lockGroup(tx, group);
      await checkDefaultRole(tx, grants, group, provider);
      const uid = newChildUid(group);
      // The uid is known before the insert: the client secret is sealed for it.
      return store.create({ ...provider, uid }, { uid, parentUid: group }, context, tx);
    });
    return created;
  },

  async updateIdentityProvider(req, context) {
    const grants = callerGrants(context);
    const uid = requireField(req.identityProvider?.uid ?? "", "identity_provider.uid");
    const patch = req.identityProvider ?? create(IdentityProviderSchema);
    const updated = await store.update(uid, patch, req.updateMask, context, async (tx, next, current) => {
      await checkDefaultRole(tx, grants, parentOf(uid), next);
      // The secret belongs to one client at one issuer: pointing the provider elsewhere
      // without giving a new one must not send the old one to the new issuer.
      const retargeted = next.oidc?.issuer !== current.oidc?.issuer || next.oidc?.clientId !== current.oidc?.clientId;
      return retargeted && !secretGiven(patch, req.updateMask) ? { oidcClientSecret: "" } : {};
    });
    return updated;
  },
}));
