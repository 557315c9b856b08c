import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../support/server.js";
import { sharedServer } from "../support/shared-server.js";

// A client nobody here wrote: openapi-typescript generates the types from the live
// /openapi.json, TypeScript checks the README's REST walkthrough
// (test/openapi-client/walkthrough.ts) against them, and openapi-fetch runs it against a test
// server. Nothing generated is committed: it goes to a directory under node_modules/.cache
// (where `openapi-fetch` resolves) and is removed afterwards.

const ROOT = join(import.meta.dirname, "../..");
const WALKTHROUGH = join(ROOT, "test/openapi-client/walkthrough.ts");

interface WalkthroughModule {
  walkthrough(
    baseUrl: string,
    token: string,
    fetchImpl: typeof fetch,
  ): Promise<{ transcript: string[]; org: { uid: string }; child: { uid: string; description: string }; pagedNames: string[] }>;
}

let server: TestServer;
let dir: string;
/** The compiled walkthrough, once the first test has type-checked it. */
let compiled: string | undefined;

beforeAll(async () => {
  server = await sharedServer();
  const cache = join(ROOT, "node_modules/.cache");
  mkdirSync(cache, { recursive: true });
  dir = mkdtempSync(join(cache, "openapi-client-"));
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
});
afterAll(() => {
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/**
 * Type-checks the walkthrough and `wrong.ts` (in `dir`) as one strict ES module project, as a
 * user's would be, and compiles the walkthrough if it is clean; returns each file's diagnostics.
 */
function typeCheck(): { walkthrough: string[]; wrong: string[] } {
  const program = ts.createProgram(
    ["walkthrough.ts", "wrong.ts"].map((f) => join(dir, f)),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      lib: ["lib.es2023.d.ts"],
      types: ["node"],
      typeRoots: [join(ROOT, "node_modules/@types")],
      strict: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: true,
      // Apart from the sources, so that what runs is the compiler's output and nothing else.
      outDir: join(dir, "out"),
    },
  );
  const text = (d: ts.Diagnostic): string => {
    const line = d.file === undefined ? 0 : d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1;
    return `${d.file?.fileName.slice(dir.length + 1) ?? ""}:${line}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
  };
  const all = ts.getPreEmitDiagnostics(program).map(text);
  const walkthrough = all.filter((d) => !d.startsWith("wrong.ts:"));
  if (walkthrough.length === 0) walkthrough.push(...program.emit(program.getSourceFile(join(dir, "walkthrough.ts"))).diagnostics.map(text));
  return { walkthrough, wrong: all.filter((d) => d.startsWith("wrong.ts:")) };
}

describe("a client generated from /openapi.json", () => {
  it("generates types from the live document that type-check the README's walkthrough, and nothing wrong", async () => {
    const started = performance.now();
    const doc = await (await fetch(`${server.url}/openapi.json`)).json();
    const schema = astToString(await openapiTS(doc as never, { silent: true }));
    writeFileSync(join(dir, "schema.d.ts"), schema);
    copyFileSync(WALKTHROUGH, join(dir, "walkthrough.ts"));
    const generated = performance.now() - started;
    // The types name what the document has: one path per resource, the RPCs' operation ids.
    expect(schema).toContain('"/iam/v2beta1/groups/{uid}": {');
    expect(schema).toContain("CreateGroupWithoutParent: {");
    expect(schema).not.toContain("{group.uid}");

    // What a caller might get wrong is refused: an old parameter name, a field that is not there, a missing uid.
    writeFileSync(
      join(dir, "wrong.ts"),
      [
        'import createClient from "openapi-fetch";',
        'import type { paths } from "./schema.js";',
        "const api = createClient<paths>({});",
        'await api.PATCH("/iam/v2beta1/groups/{uid}", { params: { path: { "group.uid": "x" } }, body: {} });',
        'await api.POST("/iam/v2beta1/groups", { body: { name: 42 } });',
        'await api.GET("/iam/v2beta1/groups/{uid}", { params: { path: {} } });',
        "export {};",
      ].join("\n"),
    );
    const { walkthrough, wrong } = typeCheck();
    expect(wrong.filter((d) => d.startsWith("wrong.ts:4:")).length, wrong.join("\n")).toBeGreaterThan(0);
    expect(wrong.filter((d) => d.startsWith("wrong.ts:5:")).length, wrong.join("\n")).toBeGreaterThan(0);
    expect(wrong.filter((d) => d.startsWith("wrong.ts:6:")).length, wrong.join("\n")).toBeGreaterThan(0);

    expect(walkthrough, walkthrough.join("\n")).toEqual([]);
    compiled = join(dir, "out", "walkthrough.js");
    console.log(
      `generated ${schema.length} characters of types in ${Math.round(generated)} ms; ` +
        `walkthrough type-checked and compiled in ${Math.round(performance.now() - started - generated)} ms`,
    );
  }, 120_000);

  it("runs the README's REST walkthrough through the generated client, child uids sent as %2F", async () => {
    if (compiled === undefined) throw new Error("the walkthrough did not type-check (previous test)");
    const { walkthrough } = (await import(pathToFileURL(compiled).href)) as WalkthroughModule;
    const sent: string[] = [];
    const recording: typeof fetch = (input, init) => {
      sent.push(
        `${input instanceof Request ? input.method : (init?.method ?? "GET")} ${input instanceof Request ? input.url : String(input)}`,
      );
      return fetch(input, init);
    };
    const result = await walkthrough(server.url, server.token, recording);
    console.log(`walkthrough through openapi-fetch:\n  ${result.transcript.join("\n  ")}`);

    expect(result.child.uid.startsWith(`${result.org.uid}/`)).toBe(true);
    expect(result.child.description).toBe("renamed");
    expect(result.pagedNames).toEqual(["platform team", "beta team", "alpha team"]);
    // The generated client encoded the child's uid: the server took it as a uid with a slash.
    const childPath = `/iam/v2beta1/groups/${result.child.uid.replace("/", "%2F")}`;
    for (const method of ["GET", "PATCH", "DELETE"]) {
      expect(
        sent.some((s) => s.startsWith(`${method} ${server.url}${childPath}`)),
        `${method} ${childPath}`,
      ).toBe(true);
    }
    expect(sent.some((s) => s.includes("/roleBindings/") && s.includes("%2F"))).toBe(true);
  }, 60_000);
});
