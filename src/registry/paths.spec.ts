import { describe, expect, it } from "vitest";
import { MAX_REGISTRY_PATH_LENGTH, parseRegistryPath, registryPathOf } from "./paths.js";

const ORG = "0123456789abcdef0123456789abcdef01234567";
const SUB = `${ORG}/89abcdef01234567`;

describe("registry paths", () => {
  it("name a repo by its group's uid (slashes as dashes) and its name, nested names included", () => {
    expect(registryPathOf(ORG, "nginx")).toBe(`${ORG}/nginx`);
    expect(registryPathOf(SUB, "library/nginx")).toBe(`${ORG}-89abcdef01234567/library/nginx`);
    for (const [group, name] of [
      [ORG, "nginx"],
      [SUB, "library/nginx"],
      [ORG, "a.b_c--d/e__f"],
    ] as const) {
      expect(parseRegistryPath(registryPathOf(group, name))).toEqual({ groupUid: group, repoName: name });
    }
  });

  it("name nothing when the first component is not a group's uid, or the rest is not a repo name", () => {
    for (const path of [
      "nginx",
      "library/nginx",
      `${ORG}`,
      `${ORG}/`,
      `${ORG}//x`,
      `${ORG}/Nginx`,
      `${ORG}/x\u0000`,
      `${ORG}/-x`,
      `${ORG.toUpperCase()}/x`,
      `${ORG}-123/x`,
      `${ORG}--89abcdef01234567/x`,
      `${ORG}-89abcdef01234567-/x`,
      `${ORG}/x/`,
      "",
    ]) {
      expect(parseRegistryPath(path), JSON.stringify(path)).toBeUndefined();
    }
  });

  it("name nothing past distribution's 255 characters, without reading a huge input", () => {
    const long = `${ORG}/${"a".repeat(MAX_REGISTRY_PATH_LENGTH)}`;
    expect(parseRegistryPath(long)).toBeUndefined();
    expect(parseRegistryPath(`${ORG}/${"a".repeat(MAX_REGISTRY_PATH_LENGTH - ORG.length - 1)}`)).toBeDefined();
    expect(parseRegistryPath("a/".repeat(1_000_000))).toBeUndefined();
  });
});
