import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

// `npm start` and the container run the server under node with the same flags, which trade CPU
// time for memory (docs/operations.md, "Running the server"), and this node accepts them: a flag
// node does not know stops it before the server starts.

const root = new URL("../../", import.meta.url);
const ENTRY = "dist/src/server/main.js";

function startFlags(): string[] {
  const start = (JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { scripts: { start: string } }).scripts.start;
  const words = start.trim().split(/\s+/);
  expect(words.slice(0, 2)).toEqual(["exec", "node"]);
  expect(words.at(-1)).toBe(ENTRY);
  return words.slice(2, -1);
}

function containerFlags(): string[] {
  const cmd = /^CMD (\[.*\])$/m.exec(readFileSync(new URL("Dockerfile", root), "utf8"))?.[1];
  expect(cmd).toBeDefined();
  const argv = JSON.parse(cmd!) as string[];
  expect(argv[0]).toBe("node");
  expect(argv.at(-1)).toBe(ENTRY);
  return argv.slice(1, -1);
}

describe("the server's node flags", () => {
  it("are the same for npm start and the container: the young generation, one V8 background thread, the heap's growth", () => {
    expect(containerFlags()).toEqual(startFlags());
    expect(startFlags()).toEqual(["--max-semi-space-size=8", "--v8-pool-size=1", "--heap-growing-percent=50"]);
  });

  it("are accepted by this node", () => {
    expect(execFileSync(process.execPath, [...startFlags(), "-e", "console.log('ran')"], { encoding: "utf8" }).trim()).toBe("ran");
  });
});
