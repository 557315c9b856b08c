import type { Command } from "commander";
import type { JsonObject } from "../api-client.js";
import type { CommandContext } from "../context.js";
import type { CliIo } from "../io.js";
import { col, field, text, time, type Column } from "../output.js";
import { registerResource, type FieldFlag, type ResourceSpec } from "./resource.js";

const UID = col("UID", "uid", "text", true);
const NAME = col("NAME", "name");
const DESCRIPTION = col("DESCRIPTION", "description");
const CREATED = col("CREATED", "createTime", "time");

const description: FieldFlag = { flag: "description", path: "description", description: "free text", arg: "<text>" };
const inGroup = { flag: "group", description: "the group that holds it", required: true };

const groups: ResourceSpec = {
  command: "groups",
  kind: "group",
  path: "/iam/v2beta1/groups",
  listKey: "groups",
  columns: [UID, NAME, DESCRIPTION, CREATED],
  list: { scopes: "all", name: true },
  create: {
    parent: { flag: "parent", description: "the parent group (none: a new organization, a root group)", required: false },
    name: "required",
  },
  fields: [description, { flag: "resource-limit", path: "resourceLimits", kind: "int-map", description: "a resource limit (update: replaces them all)", arg: "<name=n>" }],
  update: true,
  delete: true,
};

const claimMatch: FieldFlag[] = [
  { flag: "issuer", path: "claimMatch.issuer", description: "OIDC issuer the token must come from (exact)", arg: "<url>" },
  { flag: "subject", path: "claimMatch.subject", description: "the token's subject (exact)", arg: "<sub>" },
  { flag: "issuer-pattern", path: "claimMatch.issuerPattern", description: "issuer regular expression (whole match)", arg: "<regex>" },
  { flag: "subject-pattern", path: "claimMatch.subjectPattern", description: "subject regular expression (whole match)", arg: "<regex>" },
  { flag: "audience", path: "claimMatch.audience", description: "the audience the token must carry", arg: "<aud>" },
];

const identities: ResourceSpec = {
  command: "identities",
  kind: "identity",
  path: "/iam/v2beta1/identities",
  listKey: "identities",
  columns: [UID, NAME, col("ISSUER", "claimMatch.issuer"), col("SUBJECT", "claimMatch.subject"), col("LAST SEEN", "lastSeenTime", "time"), CREATED],
  list: {
    scopes: "all",
    name: true,
    filters: [
      { flag: "issuer", param: "claim_match.issuer", description: "claimMatch.issuer (exact)", arg: "<url>" },
      { flag: "subject", param: "claim_match.subject", description: "claimMatch.subject (exact)", arg: "<sub>" },
    ],
  },
  create: { parent: inGroup, name: "required" },
  fields: [description, ...claimMatch],
  update: true,
  delete: true,
};

const capability: FieldFlag = { flag: "capability", path: "capabilities", kind: "list", description: "a capability, e.g. repo.list", arg: "<cap>" };

const roles: ResourceSpec = {
  command: "roles",
  kind: "role",
  path: "/iam/v2beta1/roles",
  listKey: "roles",
  columns: [UID, NAME, col("PARENT", "parent", "text", true), col("CAPABILITIES", "capabilities"), CREATED],
  list: { scopes: "all", name: true },
  create: { parent: inGroup, name: "required" },
  fields: [description, capability],
  update: true,
  delete: true,
};

const roleBindings: ResourceSpec = {
  command: "role-bindings",
  kind: "role binding",
  path: "/iam/v2beta1/roleBindings",
  listKey: "roleBindings",
  columns: [UID, col("IDENTITY", "identity.name"), col("ROLE", "role.uid"), col("GROUP", "group.name"), CREATED],
  list: {
    scopes: "all",
    name: false,
    filters: [
      { flag: "identity", param: "identity", description: "bindings of this identity uid", arg: "<uid>" },
      { flag: "group", param: "group", description: "bindings at this group uid", arg: "<uid>" },
      { flag: "role", param: "role", description: "bindings of this role uid", arg: "<uid>" },
    ],
  },
  create: {
    parent: { flag: "group", description: "the group the role is granted at", required: true },
    only: [{ flag: "identity", path: "identityUid", description: "the identity uid", arg: "<uid>", required: true }],
  },
  fields: [{ flag: "role", path: "roleUid", description: "the role uid (built-ins: viewer, editor, owner, …)", arg: "<uid>", required: true }],
  update: true,
  delete: true,
};

// Bindings at the root, above every organization (platform administrators): the same hydrated shape
// without a group, for holders of the capability at the root (README: "Platform administrators").
const rootRoleBindings: ResourceSpec = {
  command: "root-role-bindings",
  kind: "root role binding",
  path: "/iam/v2beta1/rootRoleBindings",
  listKey: "rootRoleBindings",
  columns: [UID, col("IDENTITY", "identity.name"), col("IDENTITY UID", "identity.uid", "text", true), col("ROLE", "role.uid"), CREATED],
  list: {
    scopes: "none",
    name: false,
    filters: [
      { flag: "identity", param: "identity", description: "bindings of this identity uid", arg: "<uid>" },
      { flag: "role", param: "role", description: "bindings of this role uid", arg: "<uid>" },
    ],
  },
  create: {
    only: [{ flag: "identity", path: "identityUid", description: "the identity uid (a person's or the bootstrap identity's)", arg: "<uid>", required: true }],
  },
  fields: [{ flag: "role", path: "roleUid", description: "the built-in role uid (viewer, editor, owner, …)", arg: "<uid>", required: true }],
  update: false,
  delete: true,
};

const oidc: FieldFlag[] = [
  { flag: "issuer", path: "oidc.issuer", description: "the provider's issuer URL", arg: "<url>" },
  { flag: "client-id", path: "oidc.clientId", description: "the OAuth client id", arg: "<id>" },
  { flag: "client-secret", path: "oidc.clientSecret", description: "the OAuth client secret (write-only)", arg: "<secret>" },
  { flag: "scope", path: "oidc.additionalScopes", kind: "list", description: "an additional scope to ask for", arg: "<scope>" },
];
const defaultRole: FieldFlag = { flag: "default-role", path: "defaultRole", description: "role bound at a person's first login", arg: "<role uid>" };

const identityProviders: ResourceSpec = {
  command: "identity-providers",
  kind: "identity provider",
  path: "/iam/v2beta1/identityProviders",
  listKey: "identityProviders",
  columns: [UID, NAME, col("ISSUER", "oidc.issuer"), col("CLIENT ID", "oidc.clientId"), col("DEFAULT ROLE", "defaultRole"), CREATED],
  list: { scopes: "all", name: true },
  create: { parent: inGroup, name: "required" },
  fields: [description, defaultRole, ...oidc],
  update: true,
  delete: true,
};

const accounts: FieldFlag[] = [
  { flag: "aws-account", path: "amazon.account", description: "AWS account id (12 digits)", arg: "<id>" },
  { flag: "gcp-project-id", path: "google.projectId", description: "Google Cloud project id", arg: "<id>" },
  { flag: "gcp-project-number", path: "google.projectNumber", description: "Google Cloud project number", arg: "<n>" },
  { flag: "azure-tenant-id", path: "azure.tenantId", description: "Azure tenant id (UUID)", arg: "<uuid>" },
  { flag: "azure-client-id", path: "azure.clientIds", kind: "map", description: "an Azure client id", arg: "<name=uuid>" },
  { flag: "github-installation", path: "github.installations", kind: "int-list", description: "a GitHub App installation id", arg: "<id>" },
];

function providers(item: JsonObject): string {
  return ["amazon", "google", "azure", "github"].filter((p) => field(item, p)).join(",");
}

const accountAssociations: ResourceSpec = {
  command: "account-associations",
  kind: "account association",
  path: "/iam/v2beta1/accountAssociations",
  listKey: "accountAssociations",
  columns: [UID, NAME, { header: "PROVIDERS", value: providers }, CREATED],
  list: { scopes: "all", name: true },
  create: { parent: { ...inGroup, description: "the group (its uid becomes the association's)" }, name: "optional" },
  fields: [description, ...accounts],
  update: true,
  delete: true,
};

const inviteColumns: Column[] = [
  UID,
  col("ROLE", "roleUid"),
  col("EMAIL", "email"),
  col("EXPIRES", "expirationTime", "time"),
  { header: "SINGLE USE", value: (i) => (field(i, "singleUse") ? "yes" : "no") },
  col("REDEEMED", "redeemTime", "time"),
  CREATED,
];

// The code is shown once, in the create answer: stdout gets the code alone
// (for scripts), stderr says what it is.
function printInvite(ctx: CommandContext, invite: JsonObject): void {
  ctx.note(`invite ${text(invite["uid"])} for role ${text(invite["roleUid"])}, expires ${time(invite["expirationTime"])}.`);
  ctx.note("Its code is shown only now; redeem it with: platformctl auth login --invite <code>");
  ctx.print(text(invite["code"]));
}

const invites: ResourceSpec = {
  command: "invites",
  kind: "group invite",
  path: "/iam/v2beta1/groupInvites",
  listKey: "groupInvites",
  columns: inviteColumns,
  list: { scopes: "all", name: false },
  create: { parent: inGroup, print: printInvite },
  fields: [
    { flag: "role", path: "roleUid", description: "the role the invitee gets", arg: "<role uid>", required: true },
    { flag: "ttl", path: "ttl", kind: "duration", description: "how long it is valid, e.g. 24h, 7d (at most 30d)", arg: "<duration>", required: true },
    { flag: "email", path: "email", description: "only this email may redeem it", arg: "<email>" },
    { flag: "single-use", path: "singleUse", kind: "bool", description: "the first redemption uses it up" },
  ],
  update: false,
  delete: true,
};

/** `platformctl iam <resource> …` */
export function registerIam(program: Command, io: CliIo): void {
  const iam = program.command("iam").description("groups, identities, roles, role bindings, root role bindings, identity providers, account associations, invites");
  for (const spec of [groups, identities, roles, roleBindings, rootRoleBindings, identityProviders, accountAssociations, invites]) registerResource(iam, spec, io);
}
