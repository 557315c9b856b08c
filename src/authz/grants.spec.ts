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

  it("works each capability's visibility out once: the same object on every call, per capability", () => {
    const g = new Grants([
      { groupUid: "a", capabilities: new Set(["groups.list"]) },
      { groupUid: "c/d", capabilities: new Set(["repo.list"]) },
    ]);
    const first = g.visibility("groups.list");
    expect(g.visibility("groups.list")).toBe(first);
    expect(g.visibility("repo.list")).not.toBe(first);
    expect(g.visibility("repo.list")).toEqual({ all: false, roots: ["c/d"] });
  });
});

describe("Grants.visibility of a caller bound in many groups", () => {
  // 20,000 sibling groups, each with a child: the report's case of an identity bound in
  // thousands of groups. Comparing every root with every other was 4e8 prefix tests here
  // (tens of seconds); looking up each root's ancestors is 20,000 × depth lookups. The
  // test's own timeout (5 s) is the bound.
  it("keeps only the outermost roots of 40,000 bindings, in order", () => {
    const org = "f".repeat(40);
    const siblings = Array.from({ length: 20_000 }, (_, i) => `${org}/${i.toString(16).padStart(16, "0")}`);
    const bindings = siblings.flatMap((s) => [
      { groupUid: `${s}/0123456789abcdef`, capabilities: new Set(["groups.list"]) },
      { groupUid: s, capabilities: new Set(["groups.list"]) },
    ]);
    const v = new Grants(bindings.reverse()).visibility("groups.list");
    expect(v.all).toBe(false);
    expect(v.all ? [] : v.roots).toEqual(siblings);
  });
});
