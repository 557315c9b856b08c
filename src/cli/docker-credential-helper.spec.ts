import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credentialHelperOnPath, CREDENTIAL_HELPER_LAUNCHER } from "../../test/support/credential-helper.js";
import { ConfigStore, type TokenEntry } from "./config-store.js";
import {
  DEFAULT_USERNAME,
  HELPER_PROGRAM,
  MAX_SERVER_URL_BYTES,
  MAX_STORE_INPUT_BYTES,
  NOT_FOUND_MESSAGE,
  runCredentialHelper,
} from "./docker-credential-helper.js";

const LAUNCHER = fileURLToPath(new URL("../../bin/docker-credential-platform.js", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs one helper action in-process with `input` as its stdin. */
async function helper(args: string[], env: NodeJS.ProcessEnv, input?: string | Buffer): Promise<Run> {
  let stdout = "";
  let stderr = "";
  const sink = (add: (t: string) => void) =>
    new Writable({
      write(chunk: Buffer, _enc, cb) {
        add(chunk.toString());
        cb();
      },
    });
  const stdin = new PassThrough();
  if (input !== undefined) stdin.end(input);
  const code = await runCredentialHelper(args, { env, stdin, stdout: sink((t) => (stdout += t)), stderr: sink((t) => (stderr += t)) });
  return { code, stdout, stderr };
}

/** An unsigned JWT for `claims`: the helper reads only `sub` (the server verifies). */
const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.sig`;
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();
const anHourAgo = () => new Date(Date.now() - 3_600_000).toISOString();

let dir: string;
let n = 0;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "docker-credential-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A config directory of its own, with registries recorded and tokens stored. */
async function setup(
  registries: Record<string, string>,
  tokens: Record<string, TokenEntry>,
): Promise<{ env: NodeJS.ProcessEnv; store: ConfigStore }> {
  const store = new ConfigStore(join(dir, String(++n)));
  for (const [host, api] of Object.entries(registries)) await store.setRegistry(host, api);
  for (const [api, entry] of Object.entries(tokens)) await store.saveToken(api, entry);
  return { env: { PLATFORM_CONFIG_DIR: store.dir }, store };
}

const API = "http://api.example:8080";

describe("docker-credential-platform get", () => {
  it("answers the current login's API token, with its identity uid as the user name, for a recorded host", async () => {
    const token = jwt({ sub: "0a1b2c3d", aud: API });
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token, expiry: inAnHour(), kind: "browser" } });
    const run = await helper(["get"], env, "localhost:5000\n");
    expect(run).toEqual({ code: 0, stdout: `{"ServerURL":"localhost:5000","Username":"0a1b2c3d","Secret":"${token}"}\n`, stderr: "" });
    // as docker sends Docker Hub's, and a host written in capitals
    const url = await helper(["get"], env, "https://LocalHost:5000/v2/");
    expect(url.code).toBe(0);
    expect(JSON.parse(url.stdout)).toEqual({ ServerURL: "https://LocalHost:5000/v2/", Username: "0a1b2c3d", Secret: token });
  });

  it(`gives "${DEFAULT_USERNAME}" as the user name when the token names no identity`, async () => {
    const token = jwt({ aud: API });
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token, expiry: inAnHour(), kind: "browser" } });
    expect(JSON.parse((await helper(["get"], env, "localhost:5000")).stdout)).toMatchObject({ Username: "platform", Secret: token });
  });

  it("answers each registry with the login of the API it was recorded for", async () => {
    const other = "https://other.example";
    const a = jwt({ sub: "aaaa" });
    const b = jwt({ sub: "bbbb" });
    const { env } = await setup(
      { "localhost:5000": API, "registry.other.example": other },
      { [API]: { token: a, expiry: inAnHour(), kind: "browser" }, [other]: { token: b, expiry: inAnHour(), kind: "browser" } },
    );
    expect(JSON.parse((await helper(["get"], env, "localhost:5000")).stdout)).toMatchObject({ Username: "aaaa", Secret: a });
    expect(JSON.parse((await helper(["get"], env, "registry.other.example")).stdout)).toMatchObject({ Username: "bbbb", Secret: b });
  });

  it("answers $PLATFORM_TOKEN when it is set, as platformctl does", async () => {
    const stored = jwt({ sub: "stored" });
    const fromEnv = jwt({ sub: "ci-job" });
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token: stored, expiry: inAnHour(), kind: "browser" } });
    expect(JSON.parse((await helper(["get"], { ...env, PLATFORM_TOKEN: fromEnv }, "localhost:5000")).stdout)).toMatchObject({
      Username: "ci-job",
      Secret: fromEnv,
    });
  });

  it("says credentials not found (docker's words, exit 1) for a host that was not recorded, and with nothing recorded", async () => {
    const token = jwt({ sub: "0a1b2c3d" });
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token, expiry: inAnHour(), kind: "browser" } });
    for (const host of ["localhost:5001", "localhost", "ghcr.io", "https://index.docker.io/v1/"]) {
      expect(await helper(["get"], env, host), host).toEqual({ code: 1, stdout: `${NOT_FOUND_MESSAGE}\n`, stderr: "" });
    }
    const empty = await setup({}, {});
    expect(await helper(["get"], empty.env, "localhost:5000")).toEqual({ code: 1, stdout: `${NOT_FOUND_MESSAGE}\n`, stderr: "" });
    // a hand-edited registries entry that is not a string, or a "registries" that is not an object
    await mkdir(empty.store.dir, { recursive: true });
    await writeFile(
      join(empty.store.dir, "config.json"),
      `{"registries": {"localhost:5000": 7, "__proto__": "${API}", "no host/": "${API}"}}`,
    );
    expect((await helper(["get"], empty.env, "localhost:5000")).stdout).toBe(`${NOT_FOUND_MESSAGE}\n`);
    expect((await helper(["list"], empty.env)).stdout).toBe("{}\n");
    await writeFile(join(empty.store.dir, "config.json"), JSON.stringify({ registries: ["localhost:5000"] }));
    expect((await helper(["get"], empty.env, "localhost:5000")).stdout).toBe(`${NOT_FOUND_MESSAGE}\n`);
  });

  it("fails (exit 1, the reason on stdout for docker and on stderr) when the browser login has expired", async () => {
    const { env } = await setup(
      { "localhost:5000": API },
      { [API]: { token: jwt({ sub: "0a1b2c3d" }), expiry: anHourAgo(), kind: "browser" } },
    );
    expect(await helper(["get"], env, "localhost:5000")).toEqual({
      code: 1,
      stdout: "token expired: run platformctl auth login\n",
      stderr: `${HELPER_PROGRAM}: token expired: run platformctl auth login\n`,
    });
  });

  it("fails when the API the registry belongs to has no login", async () => {
    const { env } = await setup({ "localhost:5000": API }, {});
    const run = await helper(["get"], env, "localhost:5000");
    expect(run.code).toBe(1);
    expect(run.stdout).toBe(`not logged in to ${API}: run platformctl auth login\n`);
  });

  describe("a workload's expired token", () => {
    // Stands in for the API: no discovery document (the auth URL is the API's) and /sts/exchange.
    let server: Server;
    let api: string;
    const exchanges: URLSearchParams[] = [];
    const minted = jwt({ sub: "w0rk10ad" });
    beforeAll(async () => {
      server = createServer((req, res) => {
        const url = new URL(req.url ?? "/", "http://x");
        if (url.pathname !== "/sts/exchange" || req.headers.authorization !== "Bearer oidc.token.value")
          return void res.writeHead(404).end();
        exchanges.push(url.searchParams);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ token: minted, expiry: inAnHour() }));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      api = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise((resolve) => server.close(resolve));
    });

    it("is renewed by exchanging its OIDC token again, and the new one stored", async () => {
      const { env, store } = await setup(
        { "localhost:5000": api },
        {
          [api]: {
            token: jwt({ sub: "w0rk10ad" }),
            expiry: anHourAgo(),
            kind: "workload",
            identity: "w0rk10ad",
            identityToken: { literal: "oidc.token.value" },
            audience: api,
          },
        },
      );
      const run = await helper(["get"], env, "localhost:5000");
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual({ ServerURL: "localhost:5000", Username: "w0rk10ad", Secret: minted });
      expect(exchanges.map((q) => Object.fromEntries(q))).toEqual([{ aud: api, identity: "w0rk10ad" }]);
      expect((await store.token(api))?.token).toBe(minted);
    });
  });

  it(`refuses a server URL longer than ${MAX_SERVER_URL_BYTES} bytes, and one that is not a host`, async () => {
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token: jwt({ sub: "x" }), expiry: inAnHour(), kind: "browser" } });
    const huge = await helper(["get"], env, Buffer.alloc(MAX_SERVER_URL_BYTES + 1, "a"));
    expect(huge).toEqual({
      code: 1,
      stdout: `the server URL is longer than ${MAX_SERVER_URL_BYTES} bytes\n`,
      stderr: `${HELPER_PROGRAM}: the server URL is longer than ${MAX_SERVER_URL_BYTES} bytes\n`,
    });
    const bad: [string, string][] = [
      ["", 'server URL: "": not a host name or [IPv6 address] with an optional :port'],
      ["local\0host:5000", 'server URL: "local\\u0000host:5000": not a host name or [IPv6 address] with an optional :port'],
      ["localhost 5000", 'server URL: "localhost 5000": not a host name or [IPv6 address] with an optional :port'],
      ["ftp://localhost:5000", 'server URL: "ftp://localhost:5000": give the host (and port) without a scheme, e.g. localhost:5000'],
    ];
    for (const [input, line] of bad) {
      expect(await helper(["get"], env, input), JSON.stringify(input)).toEqual({
        code: 1,
        stdout: `${line}\n`,
        stderr: `${HELPER_PROGRAM}: ${line}\n`,
      });
    }
  });
});

describe("docker-credential-platform list, store, erase and the rest", () => {
  it("lists the recorded hosts with the user name of their API's login ({} when none)", async () => {
    const { env } = await setup(
      { "localhost:5000": API, "registry.other.example": "https://other.example" },
      { [API]: { token: jwt({ sub: "0a1b2c3d" }), expiry: inAnHour(), kind: "browser" } },
    );
    expect(await helper(["list"], env)).toEqual({
      code: 0,
      stdout: '{"localhost:5000":"0a1b2c3d","registry.other.example":"platform"}\n',
      stderr: "",
    });
    expect(await helper(["list"], (await setup({}, {})).env)).toEqual({ code: 0, stdout: "{}\n", stderr: "" });
  });

  it("store and erase succeed and change nothing: the platform login is the only source", async () => {
    const token = jwt({ sub: "0a1b2c3d" });
    const { env, store } = await setup({ "localhost:5000": API }, { [API]: { token, expiry: inAnHour(), kind: "browser" } });
    const files = async () => [await readFile(store.configFile, "utf8"), await readFile(store.tokensFile, "utf8")];
    const before = await files();
    const stored = await helper(
      ["store"],
      env,
      JSON.stringify({ ServerURL: "localhost:5000", Username: "someone", Secret: "typed-password" }),
    );
    expect(stored).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(await helper(["erase"], env, "localhost:5000")).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(await files()).toEqual(before);
    expect(JSON.parse((await helper(["get"], env, "localhost:5000")).stdout)).toMatchObject({ Username: "0a1b2c3d", Secret: token });
  });

  it(`store refuses more than ${MAX_STORE_INPUT_BYTES} bytes, erase more than ${MAX_SERVER_URL_BYTES}`, async () => {
    const { env } = await setup({}, {});
    const store = await helper(["store"], env, Buffer.alloc(MAX_STORE_INPUT_BYTES + 1, "{"));
    expect(store.code).toBe(1);
    expect(store.stdout).toBe(`the credentials JSON is longer than ${MAX_STORE_INPUT_BYTES} bytes\n`);
    expect((await helper(["erase"], env, Buffer.alloc(MAX_SERVER_URL_BYTES + 1, "a"))).code).toBe(1);
    expect((await helper(["store"], env, Buffer.alloc(MAX_STORE_INPUT_BYTES, "{"))).code).toBe(0);
  });

  it("prints its version", async () => {
    const run = await helper(["version"], {});
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^docker-credential-platform \(platformctl \d+\.\d+\.\d+\S*\)\n$/);
  });

  it("exits 1 with the usage on stderr for no action, an unknown one, or more than one argument", async () => {
    const { env } = await setup({}, {});
    for (const args of [[], ["frobnicate"], ["GET"], ["get", "extra"], ["--help"], ["get\0"]]) {
      expect(await helper(args, env, "localhost:5000"), JSON.stringify(args)).toEqual({
        code: 1,
        stdout: "",
        stderr: "Usage: docker-credential-platform <get|store|erase|list|version>\n",
      });
    }
  });
});

describe("bin/docker-credential-platform.js", () => {
  /** The launcher docker runs: `node bin/docker-credential-platform.js <action>` with `input` on stdin. */
  function spawnHelper(
    args: string[],
    env: NodeJS.ProcessEnv,
    input: string,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [LAUNCHER, ...args], {
      env: { PATH: process.env["PATH"], TMPDIR: process.env["TMPDIR"], ...env },
      stdio: "pipe",
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(input);
    return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
  }

  it("answers get with the process's exit code and streams", async () => {
    const token = jwt({ sub: "0a1b2c3d" });
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token, expiry: inAnHour(), kind: "browser" } });
    const [found, missing] = await Promise.all([
      spawnHelper(["get"], env, "localhost:5000\n"),
      spawnHelper(["get"], env, "localhost:5001\n"),
    ]);
    expect(found).toEqual({ code: 0, stdout: `{"ServerURL":"localhost:5000","Username":"0a1b2c3d","Secret":"${token}"}\n`, stderr: "" });
    expect(missing).toEqual({ code: 1, stdout: `${NOT_FOUND_MESSAGE}\n`, stderr: "" });
  });

  it("runs from PATH by its name through the tests' wrapper (test/support/credential-helper.ts), as skopeo runs it", async () => {
    expect(CREDENTIAL_HELPER_LAUNCHER).toBe(LAUNCHER);
    const token = jwt({ sub: "0a1b2c3d" });
    const { env } = await setup({ "localhost:5000": API }, { [API]: { token, expiry: inAnHour(), kind: "browser" } });
    const path = await credentialHelperOnPath(join(dir, "path with 'quotes'"), "/usr/bin:/bin");
    expect(path).toBe(`${join(dir, "path with 'quotes'")}:/usr/bin:/bin`);
    const child = spawn("sh", ["-c", "printf localhost:5000 | docker-credential-platform get"], {
      env: { PATH: path, TMPDIR: process.env["TMPDIR"], ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise((resolve) => child.on("close", resolve));
    expect({ code, stdout, stderr }).toEqual({
      code: 0,
      stdout: `{"ServerURL":"localhost:5000","Username":"0a1b2c3d","Secret":"${token}"}\n`,
      stderr: "",
    });
  });

  it("is a bin of the package", async () => {
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin[HELPER_PROGRAM]).toBe("bin/docker-credential-platform.js");
  });
});
