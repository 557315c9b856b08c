import { describe, expect, it } from "vitest";
import { CAPABILITIES } from "./capabilities.js";
import { CAPABILITY_ENUM_NAMES, capabilityNamed, dottedCapabilities, enumCapabilities, enumNameFor } from "./capability-names.js";

// The enum names other clients of this API send and parse (docs/design.md, "Capability names"),
// written out as facts: a change to the rule or to STEMS that renames one fails here.
const ENUM_NAMES: Record<string, string> = {
  "groups.list": "CAP_IAM_GROUPS_LIST",
  "groups.create": "CAP_IAM_GROUPS_CREATE",
  "groups.update": "CAP_IAM_GROUPS_UPDATE",
  "groups.delete": "CAP_IAM_GROUPS_DELETE",
  "identity.list": "CAP_IAM_IDENTITY_LIST",
  "identity.create": "CAP_IAM_IDENTITY_CREATE",
  "identity.update": "CAP_IAM_IDENTITY_UPDATE",
  "identity.delete": "CAP_IAM_IDENTITY_DELETE",
  "identity_providers.list": "CAP_IAM_IDENTITY_PROVIDERS_LIST",
  "identity_providers.create": "CAP_IAM_IDENTITY_PROVIDERS_CREATE",
  "identity_providers.update": "CAP_IAM_IDENTITY_PROVIDERS_UPDATE",
  "identity_providers.delete": "CAP_IAM_IDENTITY_PROVIDERS_DELETE",
  "account_associations.list": "CAP_IAM_ACCOUNT_ASSOCIATIONS_LIST",
  "account_associations.create": "CAP_IAM_ACCOUNT_ASSOCIATIONS_CREATE",
  "account_associations.update": "CAP_IAM_ACCOUNT_ASSOCIATIONS_UPDATE",
  "account_associations.delete": "CAP_IAM_ACCOUNT_ASSOCIATIONS_DELETE",
  "roles.list": "CAP_IAM_ROLES_LIST",
  "roles.create": "CAP_IAM_ROLES_CREATE",
  "roles.update": "CAP_IAM_ROLES_UPDATE",
  "roles.delete": "CAP_IAM_ROLES_DELETE",
  "role_bindings.list": "CAP_IAM_ROLE_BINDINGS_LIST",
  "role_bindings.create": "CAP_IAM_ROLE_BINDINGS_CREATE",
  "role_bindings.update": "CAP_IAM_ROLE_BINDINGS_UPDATE",
  "role_bindings.delete": "CAP_IAM_ROLE_BINDINGS_DELETE",
  "group_invites.list": "CAP_IAM_GROUP_INVITES_LIST",
  "group_invites.create": "CAP_IAM_GROUP_INVITES_CREATE",
  "group_invites.delete": "CAP_IAM_GROUP_INVITES_DELETE",
  "repo.list": "CAP_REPO_LIST",
  "repo.create": "CAP_REPO_CREATE",
  "repo.update": "CAP_REPO_UPDATE",
  "repo.delete": "CAP_REPO_DELETE",
  "repo.blobs.get": "CAP_REPO_BLOBS_GET",
  "tag.list": "CAP_TAG_LIST",
  "tag.create": "CAP_TAG_CREATE",
  "tag.update": "CAP_TAG_UPDATE",
  "tag.delete": "CAP_TAG_DELETE",
  "advisories.list": "CAP_ADVISORIES_LIST",
  "advisories.create": "CAP_ADVISORIES_CREATE",
  "advisories.update": "CAP_ADVISORIES_UPDATE",
  "advisories.delete": "CAP_ADVISORIES_DELETE",
  "events.list": "CAP_EVENTS_LIST",
  "subscriptions.list": "CAP_EVENTS_SUBSCRIPTION_LIST",
  "subscriptions.create": "CAP_EVENTS_SUBSCRIPTION_CREATE",
  "subscriptions.update": "CAP_EVENTS_SUBSCRIPTION_UPDATE",
  "subscriptions.delete": "CAP_EVENTS_SUBSCRIPTION_DELETE",
};

describe("capability enum names", () => {
  it("name every capability of the catalog as the table says, and nothing else", () => {
    expect(Object.fromEntries(CAPABILITY_ENUM_NAMES)).toEqual(ENUM_NAMES);
    expect([...CAPABILITY_ENUM_NAMES.keys()]).toEqual(CAPABILITIES);
  });

  it("are distinct, so each names one capability", () => {
    expect(new Set(CAPABILITY_ENUM_NAMES.values()).size).toBe(CAPABILITIES.length);
  });

  it("follow the rule for a resource not in STEMS", () => {
    expect(enumNameFor("widgets.list")).toBe("CAP_WIDGETS_LIST");
    expect(enumNameFor("widget_parts.blobs.get")).toBe("CAP_WIDGET_PARTS_BLOBS_GET");
  });

  it("read either spelling, exactly as written, and nothing else", () => {
    expect(capabilityNamed("groups.list")).toBe("groups.list");
    expect(capabilityNamed("CAP_IAM_GROUPS_LIST")).toBe("groups.list");
    expect(capabilityNamed("CAP_REPO_BLOBS_GET")).toBe("repo.blobs.get");
    for (const bad of [
      "cap_iam_groups_list",
      "Cap_Iam_Groups_List",
      "Groups.List",
      "CAP_GROUPS_LIST",
      "CAP_IAM_GROUPS_LIST\0",
      "",
      "CAP_",
    ]) {
      expect(capabilityNamed(bad), bad).toBeUndefined();
    }
  });

  it("convert lists both ways, leaving unknown names for validation to refuse", () => {
    expect(dottedCapabilities(["CAP_TAG_LIST", "tag.create", "nope"])).toEqual(["tag.list", "tag.create", "nope"]);
    expect(enumCapabilities(["tag.list", "retired.cap"])).toEqual(["CAP_TAG_LIST", "retired.cap"]);
  });
});
