import { GroupsService } from "../../../gen/platform/iam/v2beta1/groups_pb.js";
import { IdentitiesService } from "../../../gen/platform/iam/v2beta1/identities_pb.js";
import { RolesService } from "../../../gen/platform/iam/v2beta1/roles_pb.js";
import { RoleBindingsService } from "../../../gen/platform/iam/v2beta1/role_bindings_pb.js";
import { RootRoleBindingsService } from "../../../gen/platform/iam/v2beta1/root_role_bindings_pb.js";
import { IdentityProvidersService } from "../../../gen/platform/iam/v2beta1/identity_providers_pb.js";
import { AccountAssociationsService } from "../../../gen/platform/iam/v2beta1/account_associations_pb.js";
import { GroupInvitesService } from "../../../gen/platform/iam/v2beta1/group_invites_pb.js";
import type { JsonObject } from "../api-client.js";
import type { CommandContext } from "../context.js";
import { col, field, text, time } from "../output.js";
import type { ResourceOverride } from "./derived-spec.js";

// `platformctl iam <resource> …`: the commands come from the protos
// (derived-spec.ts); here only what the protos cannot say.

const UID = col("UID", "uid", "text", true);
const NAME = col("NAME", "name");
const CREATED = col("CREATED", "createTime", "time");

const description = { description: { description: "free text", arg: "<text>" } };
const inGroup = { flag: "group", description: "the group that holds it" };

// The code is shown once, in the create answer: stdout gets the code alone
// (for scripts), stderr says what it is.
function printInvite(ctx: CommandContext, invite: JsonObject): void {
  ctx.note(`invite ${text(invite["uid"])} for role ${text(invite["roleUid"])}, expires ${time(invite["expirationTime"])}.`);
  ctx.note("Its code is shown only now; redeem it with: platformctl auth login --invite <code>");
  ctx.print(text(invite["code"]));
}

function providers(item: JsonObject): string {
  return ["amazon", "google", "azure", "github"].filter((p) => field(item, p)).join(",");
}

const bindingFilters = {
  identity: { description: "bindings of this identity uid", arg: "<uid>" },
  group: { description: "bindings at this group uid", arg: "<uid>" },
  role: { description: "bindings of this role uid", arg: "<uid>" },
};

export const IAM_OVERRIDES: Record<string, ResourceOverride> = {
  [GroupsService.typeName]: {
    columns: [UID, NAME, col("DESCRIPTION", "description"), CREATED],
    parent: { description: "the parent group (none: a new organization, a root group)" },
    fields: { ...description, resourceLimits: { description: "a resource limit (update: replaces them all)", arg: "<name=n>" } },
  },
  [IdentitiesService.typeName]: {
    columns: [
      UID,
      NAME,
      col("ISSUER", "claimMatch.issuer"),
      col("SUBJECT", "claimMatch.subject"),
      col("LAST SEEN", "lastSeenTime", "time"),
      CREATED,
    ],
    // The server filters on these two claim_match fields only.
    extraFilters: [
      { flag: "issuer", param: "claim_match.issuer", description: "claimMatch.issuer (exact)", arg: "<url>" },
      { flag: "subject", param: "claim_match.subject", description: "claimMatch.subject (exact)", arg: "<sub>" },
    ],
    parent: inGroup,
    fields: {
      ...description,
      "claimMatch.issuer": { description: "OIDC issuer the token must come from (exact)", arg: "<url>" },
      "claimMatch.subject": { description: "the token's subject (exact)", arg: "<sub>" },
      "claimMatch.issuerPattern": { description: "issuer regular expression (whole match)", arg: "<regex>" },
      "claimMatch.subjectPattern": { description: "subject regular expression (whole match)", arg: "<regex>" },
      "claimMatch.audience": { description: "the audience the token must carry", arg: "<aud>" },
      "claimMatch.audiencePattern": { description: "audience regular expression (one aud, whole match)", arg: "<regex>" },
    },
  },
  [RolesService.typeName]: {
    columns: [UID, NAME, col("PARENT", "parent", "text", true), col("CAPABILITIES", "capabilities"), CREATED],
    parent: inGroup,
    fields: { ...description, capabilities: { description: "a capability, e.g. repo.list or its enum name CAP_REPO_LIST", arg: "<cap>" } },
  },
  [RoleBindingsService.typeName]: {
    columns: [UID, col("IDENTITY", "identity.name"), col("ROLE", "role.uid"), col("GROUP", "group.name"), CREATED],
    filters: bindingFilters,
    // The request's parent is optional only inside a batch, which the CLI does not send.
    parent: { flag: "group", description: "the group the role is granted at", required: true },
    fields: {
      identityUid: { flag: "identity", description: "the identity uid" },
      roleUid: { flag: "role", description: "the role uid (built-ins: viewer, editor, owner, …)" },
    },
  },
  // Bindings at the root, above every organization (platform administrators): the same hydrated shape
  // without a group, for holders of the capability at the root (docs/iam.md, "Platform administrators (root role bindings)").
  [RootRoleBindingsService.typeName]: {
    columns: [UID, col("IDENTITY", "identity.name"), col("IDENTITY UID", "identity.uid", "text", true), col("ROLE", "role.uid"), CREATED],
    filters: { identity: bindingFilters.identity, role: bindingFilters.role },
    fields: {
      identityUid: { flag: "identity", description: "the identity uid (a person's or the bootstrap identity's)" },
      roleUid: { flag: "role", description: "the built-in role uid (viewer, editor, owner, …)" },
    },
  },
  [IdentityProvidersService.typeName]: {
    columns: [UID, NAME, col("ISSUER", "oidc.issuer"), col("CLIENT ID", "oidc.clientId"), col("DEFAULT ROLE", "defaultRole"), CREATED],
    parent: inGroup,
    fields: {
      ...description,
      defaultRole: { description: "role bound at a person's first login", arg: "<role uid>" },
      "oidc.issuer": { description: "the provider's issuer URL", arg: "<url>" },
      "oidc.clientId": { description: "the OAuth client id", arg: "<id>" },
      "oidc.clientSecret": { description: "the OAuth client secret (write-only)", arg: "<secret>" },
      "oidc.additionalScopes": { flag: "scope", description: "an additional scope to ask for", arg: "<scope>" },
    },
  },
  [AccountAssociationsService.typeName]: {
    columns: [UID, NAME, { header: "PROVIDERS", value: providers }, CREATED],
    parent: { ...inGroup, description: "the group (its uid becomes the association's)" },
    fields: {
      ...description,
      "amazon.account": { flag: "aws-account", description: "AWS account id (12 digits)", arg: "<id>" },
      "google.projectId": { flag: "gcp-project-id", description: "Google Cloud project id", arg: "<id>" },
      "google.projectNumber": { flag: "gcp-project-number", description: "Google Cloud project number", arg: "<n>" },
      "azure.tenantId": { flag: "azure-tenant-id", description: "Azure tenant id (UUID)", arg: "<uuid>" },
      "azure.clientIds": { flag: "azure-client-id", description: "an Azure client id", arg: "<name=uuid>" },
      "github.installations": { flag: "github-installation", description: "a GitHub App installation id", arg: "<id>" },
    },
  },
  [GroupInvitesService.typeName]: {
    command: "invites",
    columns: [
      UID,
      col("ROLE", "roleUid"),
      col("EMAIL", "email"),
      col("EXPIRES", "expirationTime", "time"),
      { header: "SINGLE USE", value: (i) => (field(i, "singleUse") ? "yes" : "no") },
      col("REDEEMED", "redeemTime", "time"),
      CREATED,
    ],
    parent: inGroup,
    print: printInvite,
    order: ["roleUid", "ttl"],
    fields: {
      roleUid: { flag: "role", description: "the role the invitee gets", arg: "<role uid>" },
      ttl: { description: "how long it is valid, e.g. 24h, 7d (at most 30d)" },
      email: { description: "only this email may redeem it", arg: "<email>" },
      singleUse: { description: "the first redemption uses it up" },
    },
  },
};
