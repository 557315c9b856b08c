import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigStore } from "../config-store.js";
import { runCredentialHelper } from "../docker-credential-helper.js";
import { runCli } from "../run.js";
import { onPath } from "./configure-docker.js";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function sink(add: (t: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, cb) {
      add(chunk.toString());
      cb();
    },
  });
}

async function run(args: string[], env: NodeJS.ProcessEnv, main = runCli, input = ""): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const stdin = new PassThrough();
  stdin.end(input);
  const code = await main(args, { env, stdin, stdout: sink((t) => (stdout += t)), stderr: sink((t) => (stderr += t)) });
  return { code, stdout, stderr };
}

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "configure-docker-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const API = "http://api.example:8080";
const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.sig`;

/** A config directory, a docker config directory and a PATH of their own. */
async function fresh(): Promise<{ env: NodeJS.ProcessEnv; docker: string; store: ConfigStore; bin: string }> {
  const d = join(dir, String(++n));
  const bin = join(d, "bin");
  await mkdir(bin, { recursive: true });
  const env = { PLATFORM_CONFIG_DIR: join(d, "platformctl"), DOCKER_CONFIG: join(d, "docker"), PLATFORM_API: API, PATH: bin };
  return { env, docker: join(d, "docker", "config.json"), store: new ConfigStore(env.PLATFORM_CONFIG_DIR), bin };
}

describe("platformctl auth configure-docker", () => {
  it("creates docker's config file with the credential helper for the host, records the host for the API, and says so", async () => {
    const { env, docker, store } = await fresh();
    const res = await run(["auth", "configure-docker", "--registry", "LocalHost:5000"], env);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(await readFile(docker, "utf8"))).toEqual({ credHelpers: { "localhost:5000": "platform" } });
    expect((await stat(docker)).mode & 0o777).toBe(0o600);
    expect((await stat(join(docker, ".."))).mode & 0o777).toBe(0o700);
    expect(await store.registries()).toEqual({ "localhost:5000": API });
    expect(res.stdout).toBe(
      [
        `registry localhost:5000 uses the login to ${API}`,
        `${docker} created with "credHelpers": {"localhost:5000": "platform"}`,
        `docker reads it from there (docker pull|push localhost:5000/<group>/<repo>); podman and skopeo read it with --authfile ${docker} or REGISTRY_AUTH_FILE=${docker}, and run docker-credential-platform too`,
        "",
      ].join("\n"),
    );
    // not on this PATH, and no login yet: both said, on stderr
    expect(res.stderr).toContain("note: docker-credential-platform is not on PATH");
    expect(res.stderr).toContain(`note: not logged in to ${API} yet: run platformctl auth login`);
  });

  it("merges into an existing file, keeping every other key, and the helper then answers with the login", async () => {
    const { env, docker, store, bin } = await fresh();
    await mkdir(join(docker, ".."), { recursive: true });
    const before = {
      auths: { "ghcr.io": { auth: "dXNlcjpwYXNz" } },
      credsStore: "desktop",
      credHelpers: { "gcr.io": "gcloud" },
      experimental: "enabled",
    };
    await writeFile(docker, JSON.stringify(before));
    const token = jwt({ sub: "0a1b2c3d" });
    await store.saveToken(API, { token, expiry: new Date(Date.now() + 3_600_000).toISOString(), kind: "browser" });
    await writeFile(join(bin, "docker-credential-platform"), "#!/bin/sh\n");
    await chmod(join(bin, "docker-credential-platform"), 0o755);

    const res = await run(["auth", "configure-docker", "--registry", "localhost:5000"], env);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe("");
    expect(res.stdout).toContain(`${docker} now has "credHelpers": {"localhost:5000": "platform"}`);
    expect(JSON.parse(await readFile(docker, "utf8"))).toEqual({
      ...before,
      credHelpers: { "gcr.io": "gcloud", "localhost:5000": "platform" },
    });

    const got = await run(["get"], env, runCredentialHelper, "localhost:5000\n");
    expect(got).toEqual({ code: 0, stdout: `{"ServerURL":"localhost:5000","Username":"0a1b2c3d","Secret":"${token}"}\n`, stderr: "" });

    // again, with no --registry: the one recorded for the API; the file already says so
    const again = await run(["auth", "configure-docker"], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain(`${docker} already has "credHelpers": {"localhost:5000": "platform"}`);
  });

  it("writes the file --config names, and moves a host to the API it is configured with last", async () => {
    const { env, store } = await fresh();
    const authfile = join(dir, `auth-${n}.json`);
    expect((await run(["auth", "configure-docker", "--registry", "localhost:5000", "--config", authfile], env)).code).toBe(0);
    expect(JSON.parse(await readFile(authfile, "utf8"))).toEqual({ credHelpers: { "localhost:5000": "platform" } });
    const moved = await run(
      ["--api", "https://other.example", "auth", "configure-docker", "--registry", "localhost:5000", "--config", authfile],
      env,
    );
    expect(moved.stdout).toContain(`registry localhost:5000 uses the login to https://other.example (it used ${API}'s before)`);
    expect(await store.registries()).toEqual({ "localhost:5000": "https://other.example" });
  });

  it("refuses a docker config file that is not valid JSON, leaving it as it is and recording nothing", async () => {
    const { env, docker, store } = await fresh();
    await mkdir(join(docker, ".."), { recursive: true });
    await writeFile(docker, '{"auths": {');
    const res = await run(["auth", "configure-docker", "--registry", "localhost:5000"], env);
    expect(res.code).toBe(5);
    expect(res.stdout).toBe("");
    expect(res.stderr).toMatch(
      new RegExp(
        `^error: ${docker.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is not valid JSON \\(.*\\): fix it, or choose another file with --config; left as it is\\n$`,
      ),
    );
    expect(await readFile(docker, "utf8")).toBe('{"auths": {');
    expect(await store.registries()).toEqual({});
  });

  it("validates --registry (exit 2, nothing written), and needs it when the API has none recorded", async () => {
    const { env, docker, store } = await fresh();
    const bad: [string, string][] = [
      ["https://localhost:5000", "give the host (and port) without a scheme, e.g. localhost:5000"],
      ["localhost:5000/v2", "give the host (and port) without a path, e.g. localhost:5000"],
      ["local\0host", "not a host name or [IPv6 address] with an optional :port"],
      ["local host", "not a host name or [IPv6 address] with an optional :port"],
      ["localhost:99999", "port 99999 is not between 1 and 65535"],
      ["", "not a host name or [IPv6 address] with an optional :port"],
      ["a".repeat(300), "longer than 255 bytes"],
    ];
    for (const [registry, why] of bad) {
      const res = await run(["auth", "configure-docker", "--registry", registry], env);
      expect(res.code, JSON.stringify(registry)).toBe(2);
      expect(res.stderr, JSON.stringify(registry)).toMatch(
        new RegExp(`^error: --registry: ".*": ${why.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\n$`),
      );
    }
    const none = await run(["auth", "configure-docker"], env);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe("error: --registry <host:port> is needed: the registry's address, e.g. localhost:5000\n");
    await expect(stat(docker)).rejects.toMatchObject({ code: "ENOENT" });
    expect(await store.registries()).toEqual({});

    // two recorded for the API: which one is not guessed
    await store.setRegistry("localhost:5000", API);
    await store.setRegistry("localhost:5001", API);
    const two = await run(["auth", "configure-docker"], env);
    expect(two.code).toBe(2);
    expect(two.stderr).toBe(
      `error: --registry <host:port> is needed: the registry's address, e.g. localhost:5000 (${API} has localhost:5000, localhost:5001)\n`,
    );
  });

  it("onPath finds an executable in PATH's directories only", async () => {
    const { bin } = await fresh();
    await writeFile(join(bin, "plain"), "");
    await writeFile(join(bin, "runnable"), "#!/bin/sh\n");
    await chmod(join(bin, "runnable"), 0o755);
    expect(onPath("runnable", { PATH: `/nonexistent::${bin}` })).toBe(true);
    expect(onPath("plain", { PATH: bin })).toBe(false);
    expect(onPath("runnable", { PATH: "" })).toBe(false);
    expect(onPath("runnable", {})).toBe(false);
  });
});
