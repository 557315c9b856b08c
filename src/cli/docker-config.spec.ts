import { chmod, lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, truncate, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerConfigPath, MAX_DOCKER_CONFIG_BYTES, setCredHelper } from "./docker-config.js";
import { CliError, EXIT } from "./errors.js";

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "docker-config-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A directory of its own for one test. */
async function scratch(): Promise<string> {
  const d = join(dir, String(++n));
  await mkdir(d);
  return d;
}

const readJson = async (file: string): Promise<unknown> => JSON.parse(await readFile(file, "utf8"));
const mode = async (path: string) => (await stat(path)).mode & 0o777;

async function refusal(promise: Promise<unknown>): Promise<CliError> {
  const e = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(CliError);
  return e as CliError;
}

describe("dockerConfigPath", () => {
  it("is $DOCKER_CONFIG/config.json, else ~/.docker/config.json", () => {
    expect(dockerConfigPath({ DOCKER_CONFIG: "/etc/dk" })).toBe("/etc/dk/config.json");
    expect(dockerConfigPath({})).toBe(join(homedir(), ".docker", "config.json"));
  });
});

describe("setCredHelper", () => {
  it("creates the file (0600) and its directories (0700) when there is none, tab-indented as docker writes it", async () => {
    const d = await scratch();
    const file = join(d, "a", "b", "config.json");
    const result = await setCredHelper(file, "localhost:5000");
    expect(result).toEqual({ file, created: true, changed: true });
    expect(await readFile(file, "utf8")).toBe('{\n\t"credHelpers": {\n\t\t"localhost:5000": "platform"\n\t}\n}\n');
    expect(await mode(file)).toBe(0o600);
    expect(await mode(join(d, "a"))).toBe(0o700);
    expect(await mode(join(d, "a", "b"))).toBe(0o700);
    expect(await readdir(join(d, "a", "b"))).toEqual(["config.json"]);
  });

  it("keeps every other key, their order, the other hosts' helpers and the file's mode", async () => {
    const file = join(await scratch(), "config.json");
    const before = {
      auths: { "ghcr.io": { auth: "dXNlcjpwYXNz" } },
      credsStore: "desktop",
      credHelpers: { "gcr.io": "gcloud", "localhost:5000": "old" },
      psFormat: "table {{.ID}}",
      proxies: { default: { httpProxy: "http://proxy:3128" } },
    };
    await writeFile(file, JSON.stringify(before, null, 2));
    await chmod(file, 0o640);
    const result = await setCredHelper(file, "localhost:5000");
    expect(result).toEqual({ file, created: false, previous: "old", changed: true });
    const after = (await readJson(file)) as Record<string, unknown>;
    expect(after).toEqual({ ...before, credHelpers: { "gcr.io": "gcloud", "localhost:5000": "platform" } });
    expect(Object.keys(after)).toEqual(Object.keys(before));
    expect(await mode(file)).toBe(0o640);

    const second = await setCredHelper(file, "registry.example.com");
    expect(second.previous).toBeUndefined();
    expect(((await readJson(file)) as { credHelpers: object }).credHelpers).toEqual({
      "gcr.io": "gcloud",
      "localhost:5000": "platform",
      "registry.example.com": "platform",
    });
  });

  it("leaves a file that already says so as it is", async () => {
    const file = join(await scratch(), "config.json");
    const text = '{"credHelpers":{"localhost:5000":"platform"}}';
    await writeFile(file, text);
    expect(await setCredHelper(file, "localhost:5000")).toEqual({ file, created: false, previous: "platform", changed: false });
    expect(await readFile(file, "utf8")).toBe(text);
  });

  it("takes an empty file for an empty configuration, as docker does", async () => {
    const file = join(await scratch(), "config.json");
    await writeFile(file, " \n");
    expect((await setCredHelper(file, "localhost:5000")).created).toBe(false);
    expect(await readJson(file)).toEqual({ credHelpers: { "localhost:5000": "platform" } });
  });

  it("refuses a file that is not valid JSON, not an object, or whose credHelpers is not an object, leaving it as it is", async () => {
    const d = await scratch();
    const cases: [string, RegExp][] = [
      ['{"auths": {', /is not valid JSON .*left as it is$/],
      ["{'auths': {}}", /is not valid JSON/],
      ["\uFEFF{}", /is not valid JSON/],
      ["[]", /does not hold a JSON object/],
      ["null", /does not hold a JSON object/],
      ['"text"', /does not hold a JSON object/],
      ['{"credHelpers": ["platform"]}', /"credHelpers" is not a JSON object/],
      ['{"credHelpers": "platform"}', /"credHelpers" is not a JSON object/],
    ];
    for (const [i, [text, why]] of cases.entries()) {
      const file = join(d, `config-${i}.json`);
      await writeFile(file, text);
      const e = await refusal(setCredHelper(file, "localhost:5000"));
      expect(e.message, text).toMatch(why);
      expect(e.exitCode).toBe(EXIT.conflict);
      expect(await readFile(file, "utf8"), text).toBe(text);
    }
    expect((await readdir(d)).sort()).toEqual(cases.map((_, i) => `config-${i}.json`).sort());
  });

  it(`refuses a file larger than ${MAX_DOCKER_CONFIG_BYTES} bytes, a directory, and a path with NUL`, async () => {
    const d = await scratch();
    const big = join(d, "big.json");
    await writeFile(big, "{}");
    await truncate(big, MAX_DOCKER_CONFIG_BYTES + 1);
    expect((await refusal(setCredHelper(big, "localhost:5000"))).message).toMatch(/larger than 4194304 bytes/);
    expect((await stat(big)).size).toBe(MAX_DOCKER_CONFIG_BYTES + 1);
    expect((await refusal(setCredHelper(d, "localhost:5000"))).message).toBe(`${d} is not a file`);
    expect((await refusal(setCredHelper(`${d}/x\0y`, "localhost:5000"))).exitCode).toBe(EXIT.usage);
    expect((await refusal(setCredHelper("", "localhost:5000"))).exitCode).toBe(EXIT.usage);
  });

  it("writes a symbolic link's target, keeping the link", async () => {
    const d = await scratch();
    const target = join(d, "dotfiles-config.json");
    await writeFile(target, '{"auths":{}}');
    const link = join(d, "config.json");
    await symlink(target, link);
    expect((await setCredHelper(link, "localhost:5000")).file).toBe(target);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
    expect(await readJson(target)).toEqual({ auths: {}, credHelpers: { "localhost:5000": "platform" } });
  });
});
