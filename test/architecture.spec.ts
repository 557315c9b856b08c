import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

// The layer rule of docs/architecture.md, "Layers": that section's numbered list is the order, read
// here, so the rule is written once. Every relative import and re-export of a non-spec file under
// src/ counts, `import type` and `import("…")` included (docs/architecture.md says why).

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/**
 * Imports that break the rule today and that another part of issue 29 removes. The lead deletes an
 * entry when the branch that removes the import is merged; an entry whose import no longer exists
 * fails the test, so none is left behind. Nothing may be added here.
 */
const KNOWN_UNTIL_MERGED: readonly { from: string; to: string; removedBy: string }[] = [];

type Edge = { from: string; to: string };

/** The layers, bottom first: each a list of module names (`db`, or a deeper directory such as `auth/login`). */
function readLayers(): string[][] {
  const doc = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
  const section = /^## Layers\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(doc)?.[1];
  if (!section) throw new Error('docs/architecture.md has no "## Layers" section');
  const layers: string[][] = [];
  for (const line of section.split("\n")) {
    const names = /^\d+\. ((?:`[^`]+`(?:, )?)+):/.exec(line)?.[1];
    if (names) layers.push([...names.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  }
  if (layers.length < 2) throw new Error('docs/architecture.md, "Layers": no numbered list of modules');
  return layers;
}

/** The non-spec files of src/, relative to the repository. */
const files = readdirSync(join(ROOT, "src"), { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".ts") && !f.endsWith(".spec.ts"))
  .map((f) => join("src", f));

/** Every relative import of those files (into src/, gen/ or anywhere else), as paths relative to the repository. */
function readImports(): Edge[] {
  const edges: Edge[] = [];
  for (const from of files) {
    // TypeScript's own scanner: finds import/export … from, `import type`, import("…") and require.
    const { importedFiles } = ts.preProcessFile(readFileSync(join(ROOT, from), "utf8"), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith(".")) continue; // a package or node: builtin
      edges.push({ from, to: normalize(join(dirname(from), fileName)).replace(/\.js$/, ".ts") });
    }
  }
  return edges;
}

const layers = readLayers();
const layerOf = new Map(layers.flatMap((names, i) => names.map((name) => [name, i] as const)));
// Deeper paths first, so `auth/login/x.ts` is in `auth/login` when that is listed.
const listed = [...layerOf.keys()].sort((a, b) => b.length - a.length);

/** The module of a file: the longest listed path that is it or holds it, else its directory under src/. */
function moduleOf(file: string): string {
  const path = file.startsWith("src/") ? file.slice(4) : file;
  return listed.find((m) => path === m || path.startsWith(`${m}/`)) ?? path.split("/")[0]!;
}

const allImports = readImports();
const key = (e: Edge) => `${e.from} -> ${e.to}`;
const known = new Set(KNOWN_UNTIL_MERGED.map(key));
const imports = allImports.filter((e) => !known.has(key(e)));
const crossing = imports.filter((e) => moduleOf(e.from) !== moduleOf(e.to));

/** Strongly connected components of more than one node (Tarjan), each sorted; i.e. the cycles. */
function cycles(edges: readonly Edge[]): string[][] {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    if (!next.has(to)) next.set(to, new Set());
    next.get(from)!.add(to);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/**
 * For each cycle (strongly connected component), the shortest loop through each of its members,
 * each step with an import that makes it: enough to see what to move.
 */
function describeCycles(components: string[][], edges: readonly Edge[], nodeOf: (file: string) => string): string[] {
  const lines: string[] = [];
  for (const members of components) {
    const inside = new Set(members);
    const via = new Map<string, Edge[]>(); // "a b" -> the imports from node a to node b
    for (const e of edges) {
      const [a, b] = [nodeOf(e.from), nodeOf(e.to)];
      if (a === b || !inside.has(a) || !inside.has(b)) continue;
      via.set(`${a} ${b}`, [...(via.get(`${a} ${b}`) ?? []), e]);
    }
    const next = (a: string) => members.filter((b) => via.has(`${a} ${b}`));
    const seen = new Set<string>();
    const report = (loop: string[]) => {
      const first = loop.indexOf([...loop].sort()[0]!);
      const canonical = [...loop.slice(first), ...loop.slice(0, first)];
      if (seen.has(canonical.join(" "))) return;
      seen.add(canonical.join(" "));
      lines.push(`cycle: ${[...canonical, canonical[0]].join(" -> ")}`);
      canonical.forEach((a, i) => {
        const [e, ...more] = via.get(`${a} ${canonical[(i + 1) % canonical.length]}`)!;
        lines.push(`  ${key(e!)}${more.length ? ` (and ${more.length} more)` : ""}`);
      });
    };
    // Every two that import each other, then the shortest loop through each member.
    for (const a of members) for (const b of next(a)) if (a < b && via.has(`${b} ${a}`)) report([a, b]);
    for (const start of members) {
      // Breadth first from `start` back to itself: its shortest loop.
      const parent = new Map<string, string>();
      const queue = [start];
      while (queue.length && !parent.has(start)) {
        const a = queue.shift()!;
        for (const b of next(a)) if (!parent.has(b)) parent.set(b, a), queue.push(b);
      }
      const loop = [start];
      for (let n = parent.get(start)!; n !== start; n = parent.get(n)!) loop.unshift(n);
      report(loop);
    }
  }
  return lines;
}

describe("layers (docs/architecture.md, Layers)", () => {
  it("every module of src/, and every module it imports, has a layer", () => {
    const unplaced = [
      ...files.filter((f) => !layerOf.has(moduleOf(f))).map((f) => `${moduleOf(f)}: ${f}`),
      ...allImports.filter((e) => !layerOf.has(moduleOf(e.to))).map((e) => `${moduleOf(e.to)}: ${key(e)}`),
    ];
    expect(unplaced.sort()).toEqual([]);
  });

  it("every module the layers name exists", () => {
    const present = new Set([...files, ...allImports.map((e) => e.to)].map(moduleOf));
    expect([...layerOf.keys()].filter((m) => !present.has(m))).toEqual([]);
  });

  it("no import cycle between modules", () => {
    const moduleEdges = crossing.map((e) => ({ from: moduleOf(e.from), to: moduleOf(e.to) }));
    expect(describeCycles(cycles(moduleEdges), crossing, moduleOf)).toEqual([]);
  });

  it("no module imports one of its own layer or a higher one", () => {
    const upward = crossing
      .filter((e) => (layerOf.get(moduleOf(e.from)) ?? -1) <= (layerOf.get(moduleOf(e.to)) ?? -1))
      .map((e) => {
        const [from, to] = [moduleOf(e.from), moduleOf(e.to)];
        const how = layerOf.get(from) === layerOf.get(to) ? "same layer" : "upward";
        return `${from} (layer ${(layerOf.get(from) ?? -1) + 1}) -> ${to} (layer ${(layerOf.get(to) ?? -1) + 1}), ${how}: ${key(e)}`;
      });
    expect(upward.sort()).toEqual([]);
  });

  it("no import cycle between the files of one module", () => {
    const inside = imports.filter((e) => moduleOf(e.from) === moduleOf(e.to));
    expect(describeCycles(cycles(inside), inside, (f) => f)).toEqual([]);
  });

  it("every KNOWN_UNTIL_MERGED import still exists (delete the entry of one that is gone)", () => {
    const present = new Set(allImports.map(key));
    expect(KNOWN_UNTIL_MERGED.filter((e) => !present.has(key(e))).map((e) => `${key(e)} (${e.removedBy})`)).toEqual([]);
  });

  it("the scanner sees every kind of import", () => {
    // Guards the rule itself: a scanner that missed one of these would let an import through.
    const source = [
      'import a from "./a.js";',
      'import type { B } from "./b.js";',
      'export { c } from "./c.js";',
      'export type * from "./d.js";',
      'const e = await import("./e.js");',
      'type F = import("./f.js").F;',
    ].join("\n");
    expect(ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName)).toEqual([
      "./a.js",
      "./b.js",
      "./c.js",
      "./d.js",
      "./e.js",
      "./f.js",
    ]);
  });
});
