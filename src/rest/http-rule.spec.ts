import { describe, expect, it } from "vitest";
import { captureVariables, parsePathTemplate, percentDecode, splitRequestPath, TemplateSyntaxError } from "./http-rule.js";

describe("parsePathTemplate", () => {
  it("parses literals", () => {
    const t = parsePathTemplate("/iam/v2beta1/groups");
    expect(t.segments).toEqual([
      { kind: "literal", value: "iam" },
      { kind: "literal", value: "v2beta1" },
      { kind: "literal", value: "groups" },
    ]);
    expect(t.variables).toEqual([]);
    expect(t.verb).toBe("");
  });

  it("reads {field} as a one-segment variable", () => {
    const t = parsePathTemplate("/v1/things/{name}");
    expect(t.segments[2]).toEqual({ kind: "wildcard" });
    expect(t.variables).toEqual([{ fieldPath: ["name"], start: 2, end: 3, multiSegment: false }]);
  });

  it("reads {field=*} like {field}", () => {
    expect(parsePathTemplate("/v1/{name=*}").variables).toEqual(parsePathTemplate("/v1/{name}").variables);
  });

  it("reads {a.b.c=**} as a nested, multi-segment variable", () => {
    const t = parsePathTemplate("/iam/v2beta1/groups/{group.uid.value=**}");
    expect(t.segments[3]).toEqual({ kind: "deep-wildcard" });
    expect(t.variables).toEqual([{ fieldPath: ["group", "uid", "value"], start: 3, end: 4, multiSegment: true }]);
  });

  it("reads {field=prefix/*} as a variable over several template segments", () => {
    const t = parsePathTemplate("/v1/{name=projects/*/things/*}/tags");
    expect(t.segments.map((s) => s.kind)).toEqual(["literal", "literal", "wildcard", "literal", "wildcard", "literal"]);
    expect(t.variables).toEqual([{ fieldPath: ["name"], start: 1, end: 5, multiSegment: true }]);
  });

  it("reads a custom verb after the last segment", () => {
    const t = parsePathTemplate("/v1/things/{parent=**}:batchCreate");
    expect(t.verb).toBe("batchCreate");
    expect(t.variables[0]?.fieldPath).toEqual(["parent"]);
    expect(parsePathTemplate("/v1/things:watch").verb).toBe("watch");
  });

  it("accepts bare * and ** segments", () => {
    const t = parsePathTemplate("/v1/*/x/**");
    expect(t.segments.map((s) => s.kind)).toEqual(["literal", "wildcard", "literal", "deep-wildcard"]);
  });

  it("decodes percent-encoded literals", () => {
    expect(parsePathTemplate("/v1/a%20b").segments[1]).toEqual({ kind: "literal", value: "a b" });
  });

  it("rejects a literal holding an encoded slash: a request's %2F always separates segments", () => {
    expect(() => parsePathTemplate("/v1/a%2Fb")).toThrow(/encoded slash/);
  });

  it.each([
    ["", "no leading slash"],
    ["v1/things", "no leading slash"],
    ["/", "empty segment"],
    ["/v1//things", "empty segment"],
    ["/v1/{name", "unclosed variable"],
    ["/v1/{}", "empty field path"],
    ["/v1/{1name}", "field path not an identifier"],
    ["/v1/{a={b}}", "nested variable"],
    ["/v1/**/x", "** not last"],
    ["/v1/{a=**}/{b}", "** not last"],
    ["/v1/{a}/{a}", "field bound twice"],
    ["/v1/things:", "empty verb"],
    ["/v1/a%zz", "malformed escape"],
    ["/v1/x?y", "query in template"],
  ])("rejects %j (%s)", (template) => {
    expect(() => parsePathTemplate(template)).toThrow(TemplateSyntaxError);
  });
});

describe("splitRequestPath", () => {
  it("splits segments without a verb", () => {
    expect(splitRequestPath("/iam/v2beta1/groups")).toEqual([{ segments: ["iam", "v2beta1", "groups"], verb: "", encodedSlashes: [] }]);
  });

  it("offers the verb reading first, then the plain one", () => {
    expect(splitRequestPath("/v1/a/b:batchCreate")).toEqual([
      { segments: ["v1", "a", "b"], verb: "batchCreate", encodedSlashes: [] },
      { segments: ["v1", "a", "b:batchCreate"], verb: "", encodedSlashes: [] },
    ]);
  });

  it("takes the verb after the last colon of the last segment only", () => {
    expect(splitRequestPath("/v1/a:b/c:d:e")[0]).toEqual({ segments: ["v1", "a:b", "c:d"], verb: "e", encodedSlashes: [] });
  });

  it("keeps a trailing slash as an empty segment", () => {
    expect(splitRequestPath("/v1/things/")).toEqual([{ segments: ["v1", "things", ""], verb: "", encodedSlashes: [] }]);
  });

  it("reads %2F (any case) as a segment boundary and says where", () => {
    expect(splitRequestPath("/v1/a%2Fb/c%2fd%2Fe")).toEqual([
      { segments: ["v1", "a", "b", "c", "d", "e"], verb: "", encodedSlashes: [2, 4, 5] },
    ]);
    // The verb is read from the literal form's last segment; %252F is an escaped "%", not a slash.
    expect(splitRequestPath("/v1/x:y%2Fz")).toEqual([{ segments: ["v1", "x:y", "z"], verb: "", encodedSlashes: [2] }]);
    expect(splitRequestPath("/v1/a%252Fb")[0]?.segments).toEqual(["v1", "a%252Fb"]);
    // Empty pieces stay, as for "//": nothing matches them.
    expect(splitRequestPath("/v1/a%2F%2Fb")[0]?.segments).toEqual(["v1", "a", "", "b"]);
  });

  it("keeps %2F inside its segment when asked to read the path as sent", () => {
    expect(splitRequestPath("/v1/a%2Fb", false)).toEqual([{ segments: ["v1", "a%2Fb"], verb: "", encodedSlashes: [] }]);
  });

  it("has no reading for a path without a leading slash", () => {
    expect(splitRequestPath("v1/things")).toEqual([]);
    expect(splitRequestPath("")).toEqual([]);
  });
});

describe("percentDecode", () => {
  it("decodes escapes", () => {
    expect(percentDecode("a%20b%3Ac")).toBe("a b:c");
    expect(percentDecode("plain")).toBe("plain");
  });

  it("decodes UTF-8", () => {
    expect(percentDecode("caf%C3%A9")).toBe("café");
  });

  it("returns undefined for malformed escapes instead of throwing", () => {
    expect(percentDecode("%zz")).toBeUndefined();
    expect(percentDecode("%C3")).toBeUndefined();
    expect(percentDecode("%")).toBeUndefined();
  });
});

describe("captureVariables", () => {
  it("captures a ** variable as the rest of the path, slashes kept", () => {
    const t = parsePathTemplate("/iam/v2beta1/groups/{uid=**}");
    const [c] = captureVariables(t, ["iam", "v2beta1", "groups", "abc", "def", "ghi"]);
    expect(c?.value).toBe("abc/def/ghi");
  });

  it("captures prefix/* variables with their literal parts", () => {
    const t = parsePathTemplate("/v1/{name=projects/*/things/*}/tags");
    const [c] = captureVariables(t, ["v1", "projects", "p1", "things", "t1", "tags"]);
    expect(c?.value).toBe("projects/p1/things/t1");
  });

  it("decodes each captured segment and joins them with /", () => {
    const t = parsePathTemplate("/v1/{a}/{b=**}");
    const [a, b] = captureVariables(t, ["v1", "x%20z", "p", "q", "r%20s"]);
    expect(a?.value).toBe("x z");
    expect(b?.value).toBe("p/q/r s");
  });

  it("reports malformed percent-encoding as an undefined value with the raw text", () => {
    const [c] = captureVariables(parsePathTemplate("/v1/{a}"), ["v1", "%E0%A4%A"]);
    expect(c?.value).toBeUndefined();
    expect(c?.raw).toBe("%E0%A4%A");
  });

  it("captures several variables in template order", () => {
    const t = parsePathTemplate("/v1/issuers/{claim_match.issuer}/things/{name}");
    const captured = captureVariables(t, ["v1", "issuers", "acme", "things", "t1"]);
    expect(captured.map((c) => [c.variable.fieldPath.join("."), c.value])).toEqual([
      ["claim_match.issuer", "acme"],
      ["name", "t1"],
    ]);
  });
});
