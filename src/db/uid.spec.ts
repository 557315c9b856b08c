import { describe, expect, it } from "vitest";
import {
  groupAndAncestors,
  MAX_GROUP_DEPTH,
  MAX_UID_LENGTH,
  MAX_UID_SEGMENTS,
  newChildUid,
  newRootUid,
  uidDepth,
  uidProblem,
} from "./uid.js";

/** A group `depth` segments deep. */
function groupAt(depth: number): string {
  let uid = newRootUid();
  for (let i = 1; i < depth; i++) uid = newChildUid(uid);
  return uid;
}

describe("uid bounds", () => {
  it("accepts a group at the deepest level and a tag held below it, and refuses one segment more", () => {
    const deepest = groupAt(MAX_GROUP_DEPTH);
    expect(uidProblem(deepest, "group")).toBeUndefined();
    const tag = newChildUid(newChildUid(deepest));
    expect(uidDepth(tag)).toBe(MAX_UID_SEGMENTS);
    expect(tag.length).toBe(MAX_UID_LENGTH);
    expect(uidProblem(tag, "child")).toBeUndefined();
    expect(uidProblem(tag, "any")).toBeUndefined();
    expect(uidProblem(newChildUid(deepest), "identity")).toBeUndefined();
    expect(uidProblem(newChildUid(deepest), "group")).toMatch(/more than 16 segments/);
    expect(uidProblem(newChildUid(tag), "child")).toMatch(/longer than any uid/);
    expect(uidProblem(newChildUid(newChildUid(deepest)), "identity")).toMatch(/not a valid identity uid/);
  });

  it("refuses a uid of the report's shape (40 hex and 4,000 segments) on its length alone", () => {
    const deep = `${newRootUid()}${"/0123456789abcdef".repeat(4000)}`;
    for (const kind of ["group", "child", "identity", "any"] as const) expect(uidProblem(deep, kind)).toMatch(/longer than any uid/);
  });

  it("lists a uid's ancestors outermost first, each a prefix of the uid", () => {
    expect(groupAndAncestors("a/b/c")).toEqual(["a", "a/b", "a/b/c"]);
    expect(groupAndAncestors("a")).toEqual(["a"]);
    const uid = groupAt(MAX_GROUP_DEPTH);
    const all = groupAndAncestors(uid);
    expect(all).toHaveLength(MAX_GROUP_DEPTH);
    expect(all.at(-1)).toBe(uid);
    all.forEach((g, i) => {
      expect(uidDepth(g)).toBe(i + 1);
    });
  });
});
