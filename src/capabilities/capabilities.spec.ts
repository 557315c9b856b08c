import type { DescService } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { servicesInGen } from "../../test/support/generated-services.js";
import { API_SERVICE_DESCRIPTORS, DECLARED_CAPABILITIES, PUBLIC_SERVICE_DESCRIPTORS } from "../../gen/api-index.js";
import { declaredAuthorization, declaredPublic } from "../descriptors/index.js";
import { BUILT_IN_ROLES, CAPABILITIES, UNDECLARED, byCatalogOrder, isCapability } from "./capabilities.js";

// The catalog is derived from the protos (docs/design.md, "Tokens and access"). Stored roles
// hold these names and the built-in roles are written and served in this order, so the
// derived catalog must stay what the hand-written one was.

/** The catalog as it was written by hand before it was derived: the regression fixture. */
const HAND_WRITTEN = [
  "groups.list",
  "groups.create",
  "groups.update",
  "groups.delete",
  "identity.list",
  "identity.create",
  "identity.update",
  "identity.delete",
  "identity_providers.list",
  "identity_providers.create",
  "identity_providers.update",
  "identity_providers.delete",
  "account_associations.list",
  "account_associations.create",
  "account_associations.update",
  "account_associations.delete",
  "roles.list",
  "roles.create",
  "roles.update",
  "roles.delete",
  "role_bindings.list",
  "role_bindings.create",
  "role_bindings.update",
  "role_bindings.delete",
  "group_invites.list",
  "group_invites.create",
  "group_invites.delete",
  "repo.list",
  "repo.create",
  "repo.update",
  "repo.delete",
  "repo.blobs.get",
  "tag.list",
  "tag.create",
  "tag.update",
  "tag.delete",
  "advisories.list",
  "advisories.create",
  "advisories.update",
  "advisories.delete",
];

const names = (services: readonly DescService[]) => services.map((s) => s.typeName).sort();

describe("the capability catalog", () => {
  it("starts with the hand-written one, in the same order; what follows is declared by methods", () => {
    // A new resource adds its capabilities at the end; none of the old ones may move or go.
    expect(CAPABILITIES.slice(0, HAND_WRITTEN.length)).toEqual(HAND_WRITTEN);
    for (const c of CAPABILITIES.slice(HAND_WRITTEN.length)) expect(DECLARED_CAPABILITIES, c).toContain(c);
  });

  it("holds every capability any API method declares, and each method declares one (a public one none)", async () => {
    const services = await servicesInGen();
    expect(services.length).toBeGreaterThan(0);
    for (const service of services) {
      for (const method of service.methods) {
        if (declaredPublic(method)) {
          expect(declaredAuthorization(method), method.toString()).toBeUndefined();
          continue;
        }
        const capability = declaredAuthorization(method)?.capability;
        expect(capability, method.toString()).toBeDefined();
        expect(isCapability(capability!), `${method.toString()} declares ${capability}`).toBe(true);
      }
    }
  });

  it("comes from an index of the generated services that misses none", async () => {
    const services = await servicesInGen();
    const isPublic = (s: DescService) => s.methods.every((m) => declaredPublic(m));
    expect(names(API_SERVICE_DESCRIPTORS)).toEqual(names(services.filter((s) => !isPublic(s))));
    expect(names(PUBLIC_SERVICE_DESCRIPTORS)).toEqual(names(services.filter(isPublic)));
    expect(names(PUBLIC_SERVICE_DESCRIPTORS)).toContain("platform.sts.v1.SecurityTokenService");
    const declared = services.filter((s) => !isPublic(s)).flatMap((s) => s.methods.map((m) => declaredAuthorization(m)?.capability ?? ""));
    expect(DECLARED_CAPABILITIES).toEqual([...new Set(declared)].sort());
  });

  it("adds to the declared ones only what no method declares", () => {
    for (const c of UNDECLARED) expect(DECLARED_CAPABILITIES, c).not.toContain(c);
    expect([...CAPABILITIES].sort()).toEqual([...new Set([...DECLARED_CAPABILITIES, ...UNDECLARED])].sort());
    expect(isCapability("repo.blobs.get")).toBe(true);
    expect(isCapability("clusters.list")).toBe(false);
  });

  it("puts a new resource after the known ones, alphabetically, CRUD first", () => {
    const added = ["zones.list", "clusters.get", "clusters.delete", "tag.list", "clusters.list", "clusters.create", "advisories.list"];
    expect(added.sort(byCatalogOrder)).toEqual([
      "tag.list",
      "advisories.list",
      "clusters.list",
      "clusters.create",
      "clusters.delete",
      "clusters.get",
      "zones.list",
    ]);
  });
});

describe("the built-in roles", () => {
  const role = (uid: string) => BUILT_IN_ROLES.find((r) => r.uid === uid)!.capabilities;
  const editorWrites = ["repo.create", "repo.update", "repo.delete", "tag.create", "tag.update", "tag.delete"];

  it("viewer holds every list, editor adds the repo and tag writes, owner everything, in catalog order", () => {
    const lists = CAPABILITIES.filter((c) => c.endsWith(".list"));
    expect(lists.slice(0, HAND_WRITTEN.filter((c) => c.endsWith(".list")).length)).toEqual(HAND_WRITTEN.filter((c) => c.endsWith(".list")));
    expect(role("viewer")).toEqual(lists);
    expect(role("editor")).toEqual([...lists, ...editorWrites]);
    expect(role("owner")).toEqual([...new Set([...lists, ...editorWrites, ...CAPABILITIES])]);
  });

  it("registry roles pull, and push adds every repo and tag capability", () => {
    const pull = ["groups.list", "repo.list", "tag.list", "repo.blobs.get"];
    expect(role("registry.pull")).toEqual(pull);
    expect(role("registry.push")).toEqual([...new Set([...pull, ...HAND_WRITTEN.filter((c) => /^(repo|tag)\.[a-z]+$/.test(c))])]);
  });

  it("hold only capabilities of the catalog", () => {
    for (const r of BUILT_IN_ROLES) for (const c of r.capabilities) expect(isCapability(c), `${r.uid}: ${c}`).toBe(true);
  });
});
