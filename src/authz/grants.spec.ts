import { describe, expect, it } from "vitest";
import { Grants } from "./grants.js";

const grants = new Grants([
  { groupUid: "a", capabilities: new Set(["groups.list", "repo.list"]) },
  { groupUid: "a/b", capabilities: new Set(["repo.create", "groups.list"]) },
  { groupUid: "c/d", capabilities: new Set(["repo.list"]) },
]);

describe("Grants", () => {
  it("holds a capability at the binding's group and below, never above or beside", () => {
    expect(grants.holdsAt("groups.list", "a")).toBe(true);
    expect(grants.holdsAt("groups.list", "a/x/y")).toBe(true);
    expect(grants.holdsAt("repo.create", "a/b/c")).toBe(true);
    expect(grants.holdsAt("repo.create", "a")).toBe(false);
    expect(grants.holdsAt("repo.create", "a/bb")).toBe(false);
    expect(grants.holdsAt("groups.list", "ab")).toBe(false);
    expect(grants.holdsAt("repo.list", "c")).toBe(false);
  });

  it("knows root grants", () => {
    const root = new Grants([{ groupUid: null, capabilities: new Set(["advisories.create"]) }]);
    expect(root.holdsAtRoot("advisories.create")).toBe(true);
    expect(root.holdsAt("advisories.create", "any/where")).toBe(true);
    expect(grants.holdsAtRoot("groups.list")).toBe(false);
    expect(grants.holdsAnywhere("repo.create")).toBe(true);
    expect(grants.holdsAnywhere("advisories.create")).toBe(false);
  });

  it("lists the smallest set of subtrees a List may show", () => {
    expect(grants.visibility("groups.list")).toEqual({ all: false, roots: ["a"] });
    expect(grants.visibility("repo.list")).toEqual({ all: false, roots: ["a", "c/d"] });
    expect(grants.visibility("tag.list")).toEqual({ all: false, roots: [] });
    expect(new Grants([{ groupUid: null, capabilities: new Set(["tag.list"]) }]).visibility("tag.list")).toEqual({ all: true });
  });
});
