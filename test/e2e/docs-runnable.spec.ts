import { spawn } from "node:child_process";
import { appendFile, chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliEnv } from "../support/cli-process.js";
import { freePort } from "../support/registry-process.js";
import { registryTools } from "../support/registry-tools.js";
import { startTestServer, type TestServer } from "../support/server.js";

// Every shell block the README and docs/ mark runnable is run, as written, against a fresh server
// (docs/development.md, "Runnable examples"): a doc whose example stopped working fails here.
//
// A block is marked by an HTML comment on the line before its fence (GitHub shows neither):
//
//     <!-- runnable -->
//     ```sh
//
// The blocks of one file run in order in `bash -euo pipefail`, each a process of its own that
// starts with the variables the blocks before it set (so `ORG=…` in one is `$ORG` in the next). A
// docs page starts where the README's quick start leaves a reader: with the README's first
// runnable block (`PLATFORM_API`, `PLATFORM_TOKEN`) run first. A page whose examples need the
// server started with a setting says so in prose and in a comment the test reads,
// `<!-- runnable-server: NAME=value … -->`.
//
// What the test changes in a block, and nothing else: the server listens on a random port, not
// 8080 (`127.0.0.1:8080` and `localhost:8080` are rewritten to it), and so does the image registry
// it configures, not 5000 (`127.0.0.1:5000`); its data directory is a temporary one, not ./.data
// (`.data/` is rewritten to it). platformctl keeps its login and docker its configuration in
// temporary directories (PLATFORM_CONFIG_DIR, DOCKER_CONFIG), so a run touches nothing of the
// person running it. Blocks run from the repository's root, as a reader's do. For a file whose
// blocks run docker-registry or skopeo, both are on PATH as `apt-get install docker-registry skopeo`
// would put them (test/support/registry-tools.ts obtains them; skopeo is given the signature
// policy that package installs in /etc/containers). What a block leaves running in the background
// is ended when its file is done.
//
// `curl -s` exits 0 on an error answer, so a block also fails when its output holds an error code
// (`"code":5`, `"code":"not_found"`) that the block does not show in an expected answer: an example
// that quietly started failing is caught too. DOCS_RUNNABLE_LOG=<file> appends what each block printed.

const ROOT = join(import.meta.dirname, "..", "..");
const BLOCK_TIMEOUT_MS = 120_000;
const ERROR_NAMES =
  "canceled|unknown|invalid_argument|deadline_exceeded|not_found|already_exists|permission_denied|resource_exhausted|failed_precondition|aborted|out_of_range|unimplemented|internal|unavailable|data_loss|unauthenticated";

interface RunnableBlock {
  /** `README.md:27`: the line of the fence. */
  where: string;
  script: string;
}

/** The runnable blocks of a Markdown text, in order, and the server settings it asks for. */
function runnableBlocks(file: string, text: string): { blocks: RunnableBlock[]; serverEnv: Record<string, string> } {
  const blocks: RunnableBlock[] = [];
  for (const m of text.matchAll(/^<!-- runnable -->\n(?:\n)?```(?:sh|bash)\n([\s\S]*?)^```$/gm)) {
    const fence = text.slice(0, m.index + m[0].indexOf("```")).split("\n").length;
    blocks.push({ where: `${file}:${fence}`, script: m[1]! });
  }
  const serverEnv: Record<string, string> = {};
  for (const m of text.matchAll(/^<!-- runnable-server: ([^>]*?) -->$/gm)) {
    for (const pair of m[1]!.split(/\s+/)) {
      const at = pair.indexOf("=");
      const [name, value] = at > 0 ? [pair.slice(0, at), pair.slice(at + 1)] : [];
      if (!name || value === undefined) throw new Error(`${file}: runnable-server wants NAME=value, got "${pair}"`);
      serverEnv[name] = value;
    }
  }
  return { blocks, serverEnv };
}

/** The block as the test runs it: the server's and the registry's ports and the data directory instead of the defaults. */
function localize(script: string, port: number, dataDir: string, registryPort = 5000): string {
  return script
    .replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`)
    .replaceAll("localhost:8080", `localhost:${port}`)
    .replaceAll("127.0.0.1:5000", `127.0.0.1:${registryPort}`)
    .replace(/(?<![\w.$/-])\.data\//g, `${dataDir}/`);
}

/** Error codes in `output` that `script` does not show in an expected answer. */
function unexpectedErrors(script: string, output: string): string[] {
  const shown = script.replace(/\s+/g, "");
  const codes = [...output.matchAll(new RegExp(`"code":\\s*(\\d+|"(?:${ERROR_NAMES})")`, "g"))].map((m) => `"code":${m[1]}`);
  return [...new Set(codes)].filter((c) => c !== '"code":0' && !shown.includes(c));
}

// The variables one block leaves for the next: everything exported (the blocks run with `set -a`),
// less what bash keeps for itself.
const STATE_SKIP = /^(?:BASH\w*|SHELLOPTS|SHLVL|PWD|OLDPWD|_|PPID|UID|EUID)$/;

/** Runs a block in a process group of its own (`groups` gets its id), so that what it leaves running can be ended. */
function runBlock(
  script: string,
  statePath: string,
  env: NodeJS.ProcessEnv,
  groups: number[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const wrapped = [
    `set -a`,
    `[ -f ${statePath} ] && . ${statePath}`,
    `set -euo pipefail`,
    script,
    `export -p | while IFS= read -r line; do`,
    `  name=\${line#declare -x }; name=\${name%%=*}`,
    `  [[ $line == "declare -x "* && ! $name =~ ${STATE_SKIP.source} ]] && printf '%s\\n' "$line"`,
    `done > ${statePath}.next; mv ${statePath}.next ${statePath}`,
  ].join("\n");
  return new Promise((resolve) => {
    const child = spawn("bash", ["-euo", "pipefail", "-c", wrapped], { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    if (child.pid) groups.push(child.pid);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    }, BLOCK_TIMEOUT_MS);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr: timedOut ? `${stderr}\n(killed after ${BLOCK_TIMEOUT_MS} ms)` : stderr });
    });
  });
}

const readme = await readFile(join(ROOT, "README.md"), "utf8");
const docs = (await readdir(join(ROOT, "docs"))).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`);
const files = await Promise.all(
  ["README.md", ...docs].map(async (file) => ({ file, ...runnableBlocks(file, await readFile(join(ROOT, file), "utf8")) })),
);
const environment = runnableBlocks("README.md", readme).blocks[0]!;

describe("finding the runnable blocks", () => {
  it("reads the marker, the fence's line, and the server settings", () => {
    const text =
      "# t\n<!-- runnable-server: A=1 B=x=y -->\n\n<!-- runnable -->\n\n```sh\necho one\n```\n\n```sh\necho not marked\n```\n<!-- runnable -->\n```bash\necho two\n```\n";
    expect(runnableBlocks("t.md", text)).toEqual({
      blocks: [
        { where: "t.md:6", script: "echo one\n" },
        { where: "t.md:14", script: "echo two\n" },
      ],
      serverEnv: { A: "1", B: "x=y" },
    });
  });

  it("rewrites only the port and the data directory", () => {
    expect(
      localize("curl http://127.0.0.1:8080/x; cat .data/admin-token; ls my.data/ $X.data/ a/.data/ 127.0.0.1:5000/a", 4321, "/tmp/d", 5123),
    ).toBe("curl http://127.0.0.1:4321/x; cat /tmp/d/admin-token; ls my.data/ $X.data/ a/.data/ 127.0.0.1:5123/a");
  });

  it("flags error codes the block does not show", () => {
    const script = '# → {"code":9,"message":"…"}\n';
    expect(unexpectedErrors(script, '{"code":9}{"code": 16}{"code":"not_found"}{"code":"Vq3x"}')).toEqual([
      '"code":16',
      '"code":"not_found"',
    ]);
  });

  it("finds the quick start and the environment it sets", () => {
    expect(environment.script).toContain("export PLATFORM_API=http://127.0.0.1:8080");
    expect(environment.script).toContain("export PLATFORM_TOKEN=$(cat .data/admin-token)");
    expect(files.find((f) => f.file === "README.md")!.blocks.length).toBeGreaterThanOrEqual(5);
  });
});

/**
 * docker-registry and skopeo on PATH, as their Debian packages install them: skopeo with the
 * signature policy of /etc/containers, which the package brings and this machine may lack.
 */
async function registryToolsEnv(dir: string): Promise<NodeJS.ProcessEnv> {
  const tools = await registryTools();
  const bin = join(dir, "bin");
  await mkdir(bin, { recursive: true });
  const wrapper = (command: string) => `#!/bin/sh\nexec ${command} "$@"\n`;
  await writeFile(join(bin, "docker-registry"), wrapper(`'${tools.registry}'`));
  await writeFile(join(bin, "skopeo"), wrapper(`'${tools.skopeo}' --policy '${tools.policy}'`));
  await Promise.all(["docker-registry", "skopeo"].map((name) => chmod(join(bin, name), 0o755)));
  return { ...tools.env, PATH: `${bin}:${tools.env["PATH"] ?? ""}` };
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, "")
    .replace(/ /g, "-");
}

describe("links between the docs", () => {
  it("make anchors as GitHub does", () => {
    expect(anchorOf("Platform administrators (root role bindings)")).toBe("platform-administrators-root-role-bindings");
    expect(anchorOf("Registry: repos and tags")).toBe("registry-repos-and-tags");
    expect(anchorOf("docker, podman and skopeo")).toBe("docker-podman-and-skopeo");
  });

  it("lead to files and headings that exist", async () => {
    const dead: string[] = [];
    let count = 0;
    for (const file of ["README.md", ...docs]) {
      const text = await readFile(join(ROOT, file), "utf8");
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        count++;
        const [path, anchor] = target.split("#", 2) as [string, string | undefined];
        const resolved = path ? join(dirname(join(ROOT, file)), path) : join(ROOT, file);
        const exists = await stat(resolved).then(
          () => true,
          () => false,
        );
        if (!exists) dead.push(`${file}: ${target} (no such file)`);
        else if (anchor !== undefined) {
          const headings = [...(await readFile(resolved, "utf8")).matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map((h) => anchorOf(h[1]!));
          if (!headings.includes(anchor)) dead.push(`${file}: ${target} (no such heading)`);
        }
      }
    }
    expect(count).toBeGreaterThan(50);
    expect(dead).toEqual([]);
  });
});

for (const { file, blocks, serverEnv } of files.filter((f) => f.blocks.length > 0)) {
  describe(`the runnable examples of ${file}`, () => {
    let server: TestServer;
    let dir: string;
    let env: NodeJS.ProcessEnv;
    let statePath: string;
    let registryPort: number;
    const groups: number[] = [];

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "docs-runnable-"));
      registryPort = await freePort();
      server = await startTestServer({
        PLATFORM_REGISTRY_ADDR: `127.0.0.1:${registryPort}`,
        ...serverEnv,
        PLATFORM_DATA_DIR: join(dir, "data"),
      });
      const needsRegistry = blocks.some((b) => /\b(?:docker-registry|skopeo)\b/.test(b.script));
      env = cliEnv({
        ...(needsRegistry ? await registryToolsEnv(dir) : {}),
        PLATFORM_CONFIG_DIR: join(dir, "platformctl"),
        DOCKER_CONFIG: join(dir, "docker"),
      });
      statePath = join(dir, "state.sh");
      if (file !== "README.md") await run(environment);
    }, 120_000);
    afterAll(async () => {
      for (const group of groups) {
        try {
          process.kill(-group, "SIGKILL");
        } catch {
          // the group has ended
        }
      }
      await server?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    async function run(block: RunnableBlock): Promise<void> {
      const port = Number(new URL(server.url).port);
      const script = localize(block.script, port, join(dir, "data"), registryPort);
      const res = await runBlock(script, statePath, env, groups);
      if (process.env["DOCS_RUNNABLE_LOG"])
        await appendFile(process.env["DOCS_RUNNABLE_LOG"], `\n===== ${block.where}\n${res.stdout}\n--- stderr\n${res.stderr}`);
      const context = `${block.where}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`;
      expect(res.code, context).toBe(0);
      expect(unexpectedErrors(block.script, res.stdout), context).toEqual([]);
    }

    for (const block of blocks) it(block.where, () => run(block), BLOCK_TIMEOUT_MS + 10_000);
  });
}
