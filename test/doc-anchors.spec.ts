import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

// Comments point into the docs by heading (`docs/design.md, "Lists"`, `README, "Configuration"`):
// each explanation lives in one place, and a pointer to a heading that does not exist (renamed,
// never written) is a dead end. This reads every such pointer and checks its heading exists.

const ROOT = join(import.meta.dirname, "..");
// Every page under docs/ may be cited, by `docs/x.md` or `x.md`.
const PAGES = readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md"));
const DOCS: Record<string, string> = {
  README: "README.md",
  "README.md": "README.md",
  ...Object.fromEntries(PAGES.map((f) => [f, `docs/${f}`])),
};

function headings(file: string): Set<string> {
  const text = readFileSync(join(ROOT, file), "utf8");
  return new Set([...text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((m) => m[1]!));
}

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|js|mjs)$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

// `docs/design.md, "The image registry"`; the title may run over comment lines.
const CITATION = new RegExp(
  `(README(?:\\.md)?|(?:docs/)?(?:${PAGES.map((f) => f.replace(/\.md$/, "").replace(/[-.]/g, "\\$&")).join("|")})\\.md)[,:]\\s*(?:(?://|\\*)\\s*)?"([^"\\n]+(?:\\n\\s*(?://|\\*)\\s*[^"\\n]*)*)"`,
  "g",
);

/** Every pointer in `text`: the doc and the heading it names (comment markers and line breaks folded). */
function citations(text: string): { doc: string; heading: string }[] {
  return [...text.matchAll(CITATION)].map((m) => ({
    doc: DOCS[m[1]!.replace(/^docs\//, "")]!,
    heading: m[2]!.replace(/\s*\n\s*(?:\/\/|\*)\s*/g, " ").trim(),
  }));
}

describe("pointers from the code into the docs", () => {
  it("find the citations, over comment lines too", () => {
    expect(
      citations(
        '// see docs/design.md, "The image\n// registry" and README, "Quick start"; security.md,\n * "Input"; docs/sign-in.md, "Signing in"',
      ),
    ).toEqual([
      { doc: "docs/design.md", heading: "The image registry" },
      { doc: "README.md", heading: "Quick start" },
      { doc: "docs/security.md", heading: "Input" },
      { doc: "docs/sign-in.md", heading: "Signing in" },
    ]);
  });

  it("name headings that exist", () => {
    const known = new Map(Object.values(DOCS).map((d) => [d, headings(d)]));
    const files = ["src", "test", "bench", "tools", "examples"].flatMap(sources).filter((f) => !f.endsWith("doc-anchors.spec.ts"));
    const dead: string[] = [];
    let count = 0;
    for (const file of files) {
      for (const { doc, heading } of citations(readFileSync(file, "utf8"))) {
        count++;
        if (!known.get(doc)?.has(heading)) dead.push(`${file.slice(ROOT.length + 1)}: ${doc}, "${heading}"`);
      }
    }
    expect(count).toBeGreaterThan(100);
    expect(dead).toEqual([]);
  });
});
