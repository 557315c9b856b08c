import { create, fromJson, toJson, type DescMessage, type JsonObject, type MessageShape } from "@bufbuild/protobuf";
import {
  AccountAssociationSchema,
  AccountAssociationsService,
  AccountAssociation_AmazonSchema,
  AccountAssociation_AzureSchema,
  AccountAssociation_GitHubSchema,
  AccountAssociation_GoogleSchema,
  type AccountAssociation,
} from "../../../gen/platform/iam/v2beta1/account_associations_pb.js";
import { schema } from "../../db/index.js";
import { invalidArgument } from "../../errors/index.js";
import { requireField } from "../resource-store.js";
import { defineResource, resourceService } from "../resource.js";
import { toTimestamp } from "../timestamps.js";
import { checkDescription, checkOptionalName, MAX_NAME_LENGTH } from "../validation.js";

const AWS_ACCOUNT = /^\d{12}$/;
const GCP_PROJECT_ID = /^[a-z][a-z0-9-]{4,28}[a-z0-9]$/;
const GCP_PROJECT_NUMBER = /^\d{1,20}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_ENTRIES = 100;

/** The scope path of a group's association: below the group, like everything else it holds. */
const scopePath = (groupUid: string) => `${groupUid}/account-association`;

// Each provider is stored as its sub-message in protojson (null when unset).
function fromColumn<Desc extends DescMessage>(desc: Desc, json: JsonObject | null): MessageShape<Desc> | undefined {
  return json ? fromJson(desc, json) : undefined;
}
function toColumn<Desc extends DescMessage>(desc: Desc, message: MessageShape<Desc> | undefined): JsonObject | null {
  return message ? (toJson(desc, message) as JsonObject) : null;
}

function validateProviders(a: AccountAssociation): void {
  if (a.amazon && !AWS_ACCOUNT.test(a.amazon.account)) throw invalidArgument("amazon.account", "must be a 12-digit AWS account id");
  if (a.google) {
    if (!GCP_PROJECT_ID.test(a.google.projectId)) {
      throw invalidArgument("google.project_id", "must match ^[a-z][a-z0-9-]{4,28}[a-z0-9]$");
    }
    if (a.google.projectNumber && !GCP_PROJECT_NUMBER.test(a.google.projectNumber)) {
      throw invalidArgument("google.project_number", "must be decimal digits");
    }
  }
  if (a.azure) {
    if (!UUID.test(a.azure.tenantId)) throw invalidArgument("azure.tenant_id", "must be a UUID");
    const clients = Object.entries(a.azure.clientIds);
    if (clients.length > MAX_ENTRIES) throw invalidArgument("azure.client_ids", `must have at most ${MAX_ENTRIES} entries`);
    for (const [name, clientId] of clients) {
      if (!name || name.length > MAX_NAME_LENGTH) {
        throw invalidArgument("azure.client_ids", `names must be 1 to ${MAX_NAME_LENGTH} characters`);
      }
      if (!UUID.test(clientId)) throw invalidArgument(`azure.client_ids[${name}]`, "must be a UUID");
    }
  }
  if (a.github) {
    const ids = a.github.installations;
    if (ids.length > MAX_ENTRIES) throw invalidArgument("github.installations", `must have at most ${MAX_ENTRIES} entries`);
    ids.forEach((id, i) => {
      if (id <= 0n) throw invalidArgument(`github.installations[${i}]`, "must be a positive installation id");
      if (ids.indexOf(id) !== i) throw invalidArgument(`github.installations[${i}]`, `repeats installation ${id}`);
    });
  }
}

export const accountAssociationResource = defineResource({
  kind: "account association",
  table: schema.accountAssociations,
  schema: AccountAssociationSchema,
  list: { path: schema.accountAssociations.path },
  // Its uid is the group's own uid, so it is found by parent_uid, not by a uid prefix.
  groupContent: "an account association",
  toMessage: (row) =>
    create(AccountAssociationSchema, {
      uid: row.uid,
      name: row.name,
      description: row.description,
      amazon: fromColumn(AccountAssociation_AmazonSchema, row.amazon),
      google: fromColumn(AccountAssociation_GoogleSchema, row.google),
      azure: fromColumn(AccountAssociation_AzureSchema, row.azure),
      github: fromColumn(AccountAssociation_GitHubSchema, row.github),
      createTime: toTimestamp(row.createTime),
      updateTime: toTimestamp(row.updateTime),
    }),
  validate: (a) => {
    checkOptionalName(a.name);
    checkDescription(a.description);
    validateProviders(a);
  },
  toColumns: (a) => ({
    name: a.name,
    description: a.description,
    amazon: toColumn(AccountAssociation_AmazonSchema, a.amazon),
    google: toColumn(AccountAssociation_GoogleSchema, a.google),
    azure: toColumn(AccountAssociation_AzureSchema, a.azure),
    github: toColumn(AccountAssociation_GitHubSchema, a.github),
  }),
  duplicate: () => "the group already has an account association; update it instead",
  missingReference: "group",
  example: () => ({ name: "accounts", amazon: { account: "210987654321" } }),
});

export const accountAssociationsService = resourceService(AccountAssociationsService, accountAssociationResource, (store) => ({
  // One per group: the group's uid is the association's primary key.
  createAccountAssociation(req, context) {
    const group = requireField(req.parent, "parent");
    return store.create(
      req.accountAssociation ?? create(AccountAssociationSchema),
      {
        uid: group,
        parentUid: group,
        path: scopePath(group),
      },
      context,
    );
  },
}));
