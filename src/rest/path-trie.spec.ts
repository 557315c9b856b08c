import { describe, expect, it } from "vitest";
import { captureVariables, parsePathTemplate } from "./http-rule.js";
import { PathTrie, type TrieMatch } from "./path-trie.js";

function trie(routes: Array<[string, string, string]>): PathTrie<string> {
  const t = new PathTrie<string>();
  for (const [method, template, name] of routes) t.add(method, parsePathTemplate(template), name);
  return t;
}

function found(m: TrieMatch<string>): { name: string; vars: Record<string, string | undefined> } {
  if (m.kind !== "found") throw new Error(`expected a match, got ${m.kind}`);
  const vars: Record<string, string | undefined> = {};
  for (const c of captureVariables(m.template, m.segments)) vars[c.variable.fieldPath.join(".")] = c.value;
  return { name: m.value, vars };
}

const groups = trie([
  ["GET", "/iam/v2beta1/groups", "List"],
  ["GET", "/iam/v2beta1/groups/{uid=**}", "Get"],
  ["POST", "/iam/v2beta1/groups/{parent=**}", "CreateChild"],
  ["POST", "/iam/v2beta1/groups", "CreateRoot"],
  ["PATCH", "/iam/v2beta1/groups/{group.uid=**}", "Update"],
  ["DELETE", "/iam/v2beta1/groups/{uid=**}", "Delete"],
]);

describe("PathTrie", () => {
  it("prefers the literal route over a variable one", () => {
    expect(found(groups.match("GET", "/iam/v2beta1/groups"))).toEqual({ name: "List", vars: {} });
    expect(found(groups.match("POST", "/iam/v2beta1/groups"))).toEqual({ name: "CreateRoot", vars: {} });
  });

  it("gives ** every remaining segment", () => {
    expect(found(groups.match("GET", "/iam/v2beta1/groups/abc/def"))).toEqual({ name: "Get", vars: { uid: "abc/def" } });
    expect(found(groups.match("PATCH", "/iam/v2beta1/groups/a/b/c"))).toEqual({
      name: "Update",
      vars: { "group.uid": "a/b/c" },
    });
  });

  it("does not match ** with a trailing slash or an empty capture", () => {
    expect(groups.match("GET", "/iam/v2beta1/groups/").kind).toBe("not-found");
    expect(groups.match("GET", "/iam/v2beta1/groups/abc/").kind).toBe("not-found");
    expect(groups.match("GET", "/iam/v2beta1/groups/abc//def").kind).toBe("not-found");
    expect(groups.match("GET", "/iam/v2beta1/groups//").kind).toBe("not-found");
  });

  it("does not match a literal route with a trailing slash", () => {
    const t = trie([["GET", "/v1/things", "List"]]);
    expect(t.match("GET", "/v1/things/").kind).toBe("not-found");
    expect(found(t.match("GET", "/v1/things")).name).toBe("List");
  });

  it("reports a known path with the wrong method as method-not-allowed, with every allowed method", () => {
    expect(groups.match("PUT", "/iam/v2beta1/groups/abc")).toEqual({
      kind: "method-not-allowed",
      allowed: ["DELETE", "GET", "PATCH", "POST"],
    });
    expect(groups.match("DELETE", "/iam/v2beta1/groups")).toEqual({ kind: "method-not-allowed", allowed: ["GET", "POST"] });
  });

  it("reports unknown paths as not-found", () => {
    expect(groups.match("GET", "/iam/v2beta1/nope").kind).toBe("not-found");
    expect(groups.match("GET", "/iam").kind).toBe("not-found");
    expect(groups.match("GET", "/").kind).toBe("not-found");
    expect(groups.match("GET", "").kind).toBe("not-found");
  });

  it("falls back to a variable route for the same method when the literal branch has no such method", () => {
    const t = trie([
      ["GET", "/v1/things/special", "Special"],
      ["POST", "/v1/things/{name}", "Post"],
    ]);
    expect(found(t.match("POST", "/v1/things/special"))).toEqual({ name: "Post", vars: { name: "special" } });
    expect(found(t.match("GET", "/v1/things/special")).name).toBe("Special");
  });

  it("prefers * over ** at the same level", () => {
    const t = trie([
      ["GET", "/v1/{name}", "One"],
      ["GET", "/v1/{path=**}", "Many"],
    ]);
    expect(found(t.match("GET", "/v1/a")).name).toBe("One");
    expect(found(t.match("GET", "/v1/a/b"))).toEqual({ name: "Many", vars: { path: "a/b" } });
  });

  it("matches custom verbs and keeps them apart from plain routes", () => {
    const t = trie([
      ["POST", "/v1/things/{parent=**}:batchCreate", "BatchCreate"],
      ["POST", "/v1/things/{parent=**}", "Create"],
      ["GET", "/v1/things:watch", "Watch"],
    ]);
    expect(found(t.match("POST", "/v1/things/a/b:batchCreate"))).toEqual({ name: "BatchCreate", vars: { parent: "a/b" } });
    expect(found(t.match("POST", "/v1/things/a/b"))).toEqual({ name: "Create", vars: { parent: "a/b" } });
    expect(found(t.match("GET", "/v1/things:watch")).name).toBe("Watch");
    // An unknown verb is read as part of the last segment.
    expect(found(t.match("POST", "/v1/things/a:other"))).toEqual({ name: "Create", vars: { parent: "a:other" } });
  });

  it("matches percent-encoded literals and captures decoded values", () => {
    const t = trie([["GET", "/v1/things/{name}", "Get"]]);
    expect(found(t.match("GET", "/v1/thing%73/a%20b"))).toEqual({ name: "Get", vars: { name: "a b" } });
  });

  it("matches prefix/* variables only where the literals agree", () => {
    const t = trie([["GET", "/v1/{name=projects/*/things/*}", "Get"]]);
    expect(found(t.match("GET", "/v1/projects/p/things/t"))).toEqual({ name: "Get", vars: { name: "projects/p/things/t" } });
    expect(t.match("GET", "/v1/projects/p/other/t").kind).toBe("not-found");
    expect(t.match("GET", "/v1/projects/p/things").kind).toBe("not-found");
  });

  it("rejects two routes with the same shape and method", () => {
    const t = trie([["GET", "/v1/things/{name}", "A"]]);
    expect(() => t.add("GET", parsePathTemplate("/v1/things/{id}"), "B")).toThrow(/conflicts/);
    expect(() => t.add("POST", parsePathTemplate("/v1/things/{id}"), "C")).not.toThrow();
  });
});
