import { execFile } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { decodeJwt } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deriveResourceSpec } from "../../src/cli/commands/derived-spec.js";
import { buildProgram } from "../../src/cli/program.js";
import { standardMethodOf } from "../../src/descriptors/index.js";
import { API_SERVICES } from "../../src/services/index.js";
import { restClient, type JsonObject, type RestClient } from "../support/clients.js";
import { runCliInProcess, startCliInProcess } from "../support/cli-in-process.js";
import { cliEnv, LAUNCHER, runCli, runCliInTerminal, startCli, type CliResult } from "../support/cli-process.js";
import { startOidcProvider, type TestOidcProvider } from "../support/oidc-provider.js";
import { ok } from "../support/rest-iam.js";
import { startTestServer, type TestServer } from "../support/server.js";

let server: TestServer;
let provider: TestOidcProvider;
let admin: RestClient;
let tmp: string;
let orgUid: string;

beforeAll(async () => {
  provider = await startOidcProvider(["ci-deployer", "someone-else"]);
  server = await startTestServer({ PLATFORM_ALLOW_INSECURE_ISSUERS: "true" });
  admin = restClient(server.url, server.token);
  tmp = await mkdtemp(join(tmpdir(), "platformctl-test-"));
  orgUid = (await ok(admin("POST", "/iam/v2beta1/groups", { name: "cli-org" })))["uid"] as string;
});
afterAll(async () => {
  await server?.stop();
  await provider?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

let dirs = 0;
/** A fresh config directory (nothing stored yet). */
function freshConfigDir(): string {
  return join(tmp, `config-${++dirs}`);
}

// Most tests run platformctl in-process (runCliInProcess, startCliInProcess). The few through
// runCli, startCli and runCliInTerminal start bin/platformctl.js, for what only a process shows:
// its exit code, its pipes and stdin, a terminal.

/** platformctl against the test server with the admin token from the environment. */
function asAdmin(args: string[], input?: string): Promise<CliResult> {
  return runCliInProcess(["--api", server.url, ...args], { PLATFORM_CONFIG_DIR: freshConfigDir(), PLATFORM_TOKEN: server.token }, input);
}

function okRun(res: CliResult): CliResult {
  expect(res.code, `stdout: ${res.stdout}\nstderr: ${res.stderr}`).toBe(0);
  return res;
}

function json(res: CliResult): JsonObject {
  return JSON.parse(okRun(res).stdout) as JsonObject;
}

/** Table rows as cells: split where the header's columns start (the header defines the alignment). */
function tableRows(stdout: string): { header: string[]; rows: string[][] } {
  const lines = stdout.trimEnd().split("\n");
  const header = lines[0]!;
  const starts = [...header.matchAll(/(?:^|\s{2})(\S)/g)].map((m) => m.index! + m[0].length - 1);
  const cut = (line: string) => starts.map((s, i) => line.slice(s, starts[i + 1]).trim());
  return { header: cut(header), rows: lines.slice(1).map(cut) };
}

/** A loopback port nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", () => resolve()));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Runs a process to its end; its stdout (a non-zero exit is an error with its stderr). */
function runProcess(file: string, args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(file, args, { env }, (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout))),
  );
}

/** Text matched literally inside a RegExp (file paths). */
const escapeRe = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

async function tokensFile(dir: string): Promise<Record<string, JsonObject>> {
  return JSON.parse(await readFile(join(dir, "tokens.json"), "utf8")) as Record<string, JsonObject>;
}

describe("platformctl basics", () => {
  it("prints its help from the launcher and exits 0", async () => {
    const res = okRun(await runCli(["--help"], {}));
    expect(res.stdout).toContain("Usage: platformctl");
    for (const area of ["auth", "iam", "registry", "advisories"]) expect(res.stdout).toContain(area);
  });

  it("says 'an identity', 'an advisory' in the help of every command", async () => {
    const helps: { path: string; text: string }[] = [];
    const walk = (cmd: Command, path: string[]) => {
      // what `--help` prints; wrapping depends on the terminal, so whitespace is normalized
      helps.push({ path: path.join(" "), text: cmd.helpInformation().replace(/\s+/g, " ") });
      for (const sub of cmd.commands) walk(sub, [...path, sub.name()]);
    };
    walk(buildProgram(), []);
    expect(helps.length).toBeGreaterThan(50);
    expect(helps.map((h) => h.path)).toEqual(
      expect.arrayContaining(["iam identities create", "iam account-associations delete", "advisories import"]),
    );
    for (const { path, text } of helps) {
      expect(text, path).not.toMatch(/\ba (identity|identities|advisory|advisories|account|organization|invite|IdP|OSV|OIDC)\b/i);
      expect(text, path).not.toMatch(/\ba [aeio]/i);
    }
    expect(helps.find((h) => h.path === "iam identities create")!.text).toContain("create an identity");
    expect(helps.find((h) => h.path === "iam identity-providers delete")!.text).toContain("delete an identity provider");
    // running the command prints the same text
    for (const path of ["iam identities update", "advisories import"]) {
      const res = okRun(await runCliInProcess([...path.split(" "), "--help"], {}));
      expect(res.stdout.replace(/\s+/g, " "), path).toBe(helps.find((h) => h.path === path)!.text);
    }
    for (const doc of ["README.md", "docs/cli.md", "docs/iam.md", "docs/sign-in.md", "docs/registry.md"]) {
      const text = await readFile(new URL(`../../${doc}`, import.meta.url), "utf8");
      expect(text, doc).not.toMatch(/\ba (identity|identities|advisory|advisories|IdP)\b/i);
    }
  });

  it("exits 2 on a usage error, with one error line", async () => {
    // through the launcher: the process exits with the code runCli returns
    const res = await runCli(["iam", "groups", "frobnicate"], {});
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^error: unknown command 'frobnicate'/);
    const bad = await runCliInProcess(["--api", server.url, "iam", "groups", "list", "--page-size", "many"], { PLATFORM_TOKEN: "x" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("error: option '--page-size <n>' argument 'many' is invalid. must be a whole number");
  });

  it("the launcher runs dist/ while it is current, and the sources through tsx once one under src/ or gen/ (not a spec) is newer", async () => {
    // A copy of the launcher in a tree of its own, whose two entry points say which one ran.
    const root = await mkdtemp(join(tmpdir(), "platform-launcher-"));
    try {
      await Promise.all(["bin", "src/cli", "gen", "dist/src/cli"].map((d) => mkdir(join(root, d), { recursive: true })));
      await copyFile(LAUNCHER, join(root, "bin", "platformctl.js"));
      await copyFile(join(dirname(LAUNCHER), "dist-current.js"), join(root, "bin", "dist-current.js"));
      await writeFile(join(root, "package.json"), '{ "type": "module" }\n');
      await symlink(fileURLToPath(new URL("../../node_modules", import.meta.url)), join(root, "node_modules"));
      await writeFile(join(root, "src", "cli", "main.ts"), 'const ran: string = "sources";\nconsole.log(ran);\n');
      await writeFile(join(root, "gen", "api.ts"), "export {};\n");
      await writeFile(join(root, "dist", "src", "cli", "main.js"), 'console.log("dist");\n');
      const ran = async () => (await runProcess(process.execPath, [join(root, "bin", "platformctl.js")], cliEnv({}))).trim();
      const at = (path: string, secondsFromNow: number) =>
        utimes(join(root, path), new Date(Date.now() + secondsFromNow * 1000), new Date(Date.now() + secondsFromNow * 1000));

      await writeFile(join(root, "src", "cli", "main.spec.ts"), "export {};\n");
      await Promise.all([at("src/cli/main.ts", -60), at("gen/api.ts", -60), at("src/cli/main.spec.ts", 30)]);
      // A spec is not built into dist/: a newer one leaves it current.
      expect(await ran()).toBe("dist");
      await at("gen/api.ts", 0);
      expect(await ran()).toBe("sources");
      await Promise.all([at("dist/src/cli/main.js", 30), at("src/cli/main.ts", 60)]);
      expect(await ran()).toBe("sources");
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("`prepare` builds dist/ only when it is not current (npx runs it again at a checkout's first `npx platformctl`)", async () => {
    const root = await mkdtemp(join(tmpdir(), "platform-prepare-"));
    try {
      const entries = ["server/main.js", "cli/main.js", "cli/docker-credential-main.js"];
      await Promise.all(["bin", "src/cli", "dist/src/server", "dist/src/cli"].map((d) => mkdir(join(root, d), { recursive: true })));
      for (const file of ["prepare.js", "dist-current.js"]) await copyFile(join(dirname(LAUNCHER), file), join(root, "bin", file));
      // The build this copy runs only counts how often it ran.
      const build = `node -e "require('fs').appendFileSync('builds', 'x')"`;
      await writeFile(join(root, "package.json"), JSON.stringify({ type: "module", scripts: { build } }));
      await writeFile(join(root, "src", "cli", "main.ts"), "export {};\n");
      const builds = async () => (await readFile(join(root, "builds"), "utf8").catch(() => "")).length;
      const prepare = () => runProcess(process.execPath, [join(root, "bin", "prepare.js")], cliEnv({}));
      const at = (path: string, secondsFromNow: number) =>
        utimes(join(root, path), new Date(Date.now() + secondsFromNow * 1000), new Date(Date.now() + secondsFromNow * 1000));

      await prepare(); // no dist/ yet
      expect(await builds()).toBe(1);
      for (const e of entries) await writeFile(join(root, "dist", "src", e), "\n");
      await at("src/cli/main.ts", -60);
      await prepare(); // current: nothing to do
      expect(await builds()).toBe(1);
      await at("src/cli/main.ts", 30); // a source newer than dist/
      await prepare();
      expect(await builds()).toBe(2);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("through the launcher: a reader that stops early (`| head`) is not an error", async () => {
    const p = startCli(["--help"], {});
    // nobody reads stdout: the help goes into a closed pipe (EPIPE)
    p.child.stdout.destroy();
    p.child.stdin.end();
    const res = await p.done;
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toBe("");
  });

  it("names the API URL when it cannot be reached (exit 6)", async () => {
    const closed = await closedPort();
    const res = await runCliInProcess(["--api", `http://127.0.0.1:${closed}`, "iam", "groups", "list"], { PLATFORM_TOKEN: "x" });
    expect(res.code).toBe(6);
    expect(res.stderr).toBe(
      `error: cannot reach http://127.0.0.1:${closed}: connection refused (is the server running? choose another with --api or PLATFORM_API)\n`,
    );
  });

  it("says to log in when nothing is stored for the API (exit 4)", async () => {
    const res = await runCliInProcess(["--api", server.url, "iam", "groups", "list"], { PLATFORM_CONFIG_DIR: freshConfigDir() });
    expect(res.code).toBe(4);
    expect(res.stderr).toBe(`error: not logged in to ${server.url}: run platformctl auth login\n`);
  });

  it("takes the API from PLATFORM_API when --api is not given", async () => {
    const res = await runCliInProcess(["-o", "json", "iam", "groups", "get", orgUid], {
      PLATFORM_API: server.url,
      PLATFORM_TOKEN: server.token,
      PLATFORM_CONFIG_DIR: freshConfigDir(),
    });
    expect(json(res)["name"]).toBe("cli-org");
  });
});

describe("workload login (token exchange)", () => {
  let identityUid: string;
  let dir: string;
  let tokenFile: string;
  const cli = (args: string[]) => runCliInProcess(["--api", server.url, ...args], { PLATFORM_CONFIG_DIR: dir });

  beforeAll(async () => {
    const identity = await ok(
      admin("POST", `/iam/v2beta1/identities/${orgUid}`, {
        name: "ci deployer",
        claimMatch: { issuer: provider.issuer, subject: "ci-deployer" },
      }),
    );
    identityUid = identity["uid"] as string;
    await ok(admin("POST", `/iam/v2beta1/roleBindings/${orgUid}`, { identityUid, roleUid: "owner" }));
    dir = freshConfigDir();
    tokenFile = join(tmp, "oidc-token.jwt");
    await writeFile(tokenFile, `${await provider.workloadToken("ci-deployer", server.app.urls.authUrl)}\n`);
  });

  it("logs in with --identity and an OIDC token file; auth token prints a token that works on the API", async () => {
    const login = okRun(
      await cli(["auth", "login", "--identity", identityUid, "--identity-token", tokenFile, "--audience", server.app.urls.baseUrl]),
    );
    // the token names only the uid; the name comes from the API
    expect(login.stdout).toMatch(
      new RegExp(`^logged in to ${server.url} as ci deployer \\(identity ${identityUid}, workload, expires in (59m|1h)\\)\\n$`),
    );
    const token = okRun(await cli(["auth", "token"])).stdout.trim();
    expect(decodeJwt(token)).toMatchObject({ sub: identityUid, aud: server.app.urls.baseUrl });
    // as curl would: the printed token is a bearer token of the API
    const res = await restClient(server.url, token)("GET", `/iam/v2beta1/groups/${orgUid}`);
    expect(res.status).toBe(200);
    expect(res.body["name"]).toBe("cli-org");
    // and the CLI itself uses it
    expect(json(await cli(["-o", "json", "iam", "groups", "get", orgUid]))["uid"]).toBe(orgUid);
  });

  it("stores tokens per API in a 0600 file inside a 0700 directory, and remembers the API", async () => {
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    expect((await stat(join(dir, "tokens.json"))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, "config.json"))).mode & 0o777).toBe(0o600);
    const entry = (await tokensFile(dir))[server.url]!;
    expect(entry).toMatchObject({
      kind: "workload",
      identity: identityUid,
      identityToken: { file: tokenFile },
      audience: server.app.urls.baseUrl,
    });
    expect(JSON.parse(await readFile(join(dir, "config.json"), "utf8"))).toEqual({ current: server.url });
    // without --api the current API is used
    const res = await runCliInProcess(["-o", "json", "iam", "groups", "get", orgUid], { PLATFORM_CONFIG_DIR: dir });
    expect(json(res)["uid"]).toBe(orgUid);
  });

  it("auth status shows the API, identity, its name, expiry and kind, one line each", async () => {
    const res = okRun(await cli(["auth", "status"]));
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(5);
    expect(lines[0]).toBe(`api:      ${server.url}`);
    expect(lines[1]).toBe(`identity: ${identityUid}`);
    expect(lines[2]).toBe("name:     ci deployer");
    expect(lines[3]).toMatch(/^expiry: {3}\d{4}-\d{2}-\d{2}T\S+Z \(expires in (59m|1h)\)$/);
    expect(lines[4]).toBe("kind:     workload");
    const asJson = json(await cli(["-o", "json", "auth", "status"]));
    expect(asJson).toMatchObject({ api: server.url, identity: identityUid, name: "ci deployer", kind: "workload" });
  });

  it("names an identity that has no role yet (everyone may read themselves)", async () => {
    const roleless = await ok(
      admin("POST", `/iam/v2beta1/identities/${orgUid}`, {
        name: "no roles",
        claimMatch: { issuer: provider.issuer, subject: "someone-else" },
      }),
    );
    const uid = roleless["uid"] as string;
    const other = freshConfigDir();
    const oidc = await provider.workloadToken("someone-else", server.app.urls.authUrl);
    const run = (args: string[]) => runCliInProcess(["--api", server.url, ...args], { PLATFORM_CONFIG_DIR: other });
    const login = okRun(await run(["auth", "login", "--identity", uid, "--identity-token", oidc, "--audience", server.app.urls.baseUrl]));
    expect(login.stdout).toMatch(
      new RegExp(`^logged in to ${server.url} as no roles \\(identity ${uid}, workload, expires in (59m|1h)\\)\\n$`),
    );
    const status = okRun(await run(["auth", "status"]));
    expect(status.stdout).toContain(`identity: ${uid}\nname:     no roles\n`);
    expect(json(await run(["-o", "json", "auth", "status"]))).toMatchObject({ identity: uid, name: "no roles" });
  });

  it("re-exchanges an expired workload token, reading the (refreshed) token file again", async () => {
    const stored = await tokensFile(dir);
    stored[server.url] = { ...stored[server.url]!, token: "stale.token.value", expiry: "2020-01-01T00:00:00.000Z" };
    await writeFile(join(dir, "tokens.json"), JSON.stringify(stored));
    await writeFile(tokenFile, await provider.workloadToken("ci-deployer", server.app.urls.authUrl));
    const token = okRun(await cli(["auth", "token"])).stdout.trim();
    expect(token).not.toBe("stale.token.value");
    expect(decodeJwt(token).sub).toBe(identityUid);
    const renewed = (await tokensFile(dir))[server.url]!;
    expect(renewed["token"]).toBe(token);
    expect(Date.parse(renewed["expiry"] as string)).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect((await restClient(server.url, token)("GET", `/iam/v2beta1/groups/${orgUid}`)).status).toBe(200);
  });

  it("events watch goes on when the server ends its stream at the token's expiry: exchanged again, from the last event printed", async () => {
    const team = (await ok(admin("POST", `/iam/v2beta1/groups/${orgUid}`, { name: "watch-renewal" })))["uid"] as string;
    // A stored token the server lets expire within 2 s, which the CLI still takes for fresh.
    const short = await server.app.tokens.mint(identityUid, server.app.urls.baseUrl, 2);
    const stored = await tokensFile(dir);
    stored[server.url] = { ...stored[server.url]!, token: short.token, expiry: "2099-01-01T00:00:00.000Z" };
    await writeFile(join(dir, "tokens.json"), JSON.stringify(stored));
    await writeFile(tokenFile, await provider.workloadToken("ci-deployer", server.app.urls.authUrl));
    const watching = server.app.eventHub.size;
    const run = startCliInProcess(
      ["--api", server.url, "-o", "json", "events", "watch", "--children-of", team, "--type-prefix", "platform.registry.", "--count", "2"],
      {
        PLATFORM_CONFIG_DIR: dir,
      },
    );
    run.stdin.end();
    for (let i = 0; i < 250 && server.app.eventHub.size <= watching; i++) await new Promise((r) => setTimeout(r, 20));
    const first = await ok(admin("POST", `/registry/v2beta1/repos/${team}`, { name: "before-expiry" }));
    // Expired, renewed: the store holds a new token. A change made now is replayed after the first.
    const renewed = async () => (await tokensFile(dir))[server.url]!["token"] !== short.token;
    for (let i = 0; i < 250 && !(await renewed()); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await renewed()).toBe(true);
    const second = await ok(admin("POST", `/registry/v2beta1/repos/${team}`, { name: "after-expiry" }));
    const res = okRun(await run.done);
    expect(
      res.stdout
        .trimEnd()
        .split("\n")
        .map((line) => (JSON.parse(line) as JsonObject)["subject"]),
    ).toEqual([first["uid"], second["uid"]]);
    expect(res.stderr).toBe("");
  });

  it("fails with exit 4 when the expired workload's token file is gone", async () => {
    const gone = freshConfigDir();
    const missing = join(tmp, "no-such-token.jwt");
    const entry = { ...(await tokensFile(dir))[server.url]!, expiry: "2020-01-01T00:00:00.000Z", identityToken: { file: missing } };
    await mkdir(gone, { recursive: true });
    await writeFile(join(gone, "tokens.json"), JSON.stringify({ [server.url]: entry }));
    const res = await runCliInProcess(["--api", server.url, "auth", "token"], { PLATFORM_CONFIG_DIR: gone });
    expect(res.code).toBe(4);
    expect(res.stderr).toBe(`error: cannot read the identity token file ${missing}: ENOENT\n`);
  });

  it("refuses an OIDC token the identity does not accept (exit 4), storing nothing", async () => {
    const other = freshConfigDir();
    const res = await runCliInProcess(
      [
        "--api",
        server.url,
        "auth",
        "login",
        "--identity",
        identityUid,
        "--identity-token",
        await provider.workloadToken("someone-else", server.app.urls.authUrl),
        "--audience",
        server.app.urls.baseUrl,
      ],
      { PLATFORM_CONFIG_DIR: other },
    );
    expect(res.code).toBe(4);
    expect(res.stderr).toBe(
      `error: token exchange refused for identity ${identityUid}: check the identity's claimMatch and the OIDC token's issuer, subject and expiry\n`,
    );
    await expect(stat(join(other, "tokens.json"))).rejects.toThrow(/ENOENT/);
  });

  it("uses the API URL as the audience by default (either loopback spelling), and says how to pick another", async () => {
    // the server's base URL is http://localhost:<port>: as --api it is also the audience
    const asBase = await runCliInProcess(
      ["--api", server.app.urls.baseUrl, "auth", "login", "--identity", identityUid, "--identity-token", tokenFile],
      {
        PLATFORM_CONFIG_DIR: freshConfigDir(),
      },
    );
    okRun(asBase);
    // through 127.0.0.1 (the listener) the default audience is the same API: no --audience needed
    const asIp = await runCliInProcess(["--api", server.url, "auth", "login", "--identity", identityUid, "--identity-token", tokenFile], {
      PLATFORM_CONFIG_DIR: freshConfigDir(),
    });
    okRun(asIp);
    // an audience of no service here is refused, saying how to choose another
    const foreign = await runCliInProcess(
      [
        "--api",
        server.url,
        "auth",
        "login",
        "--identity",
        identityUid,
        "--identity-token",
        tokenFile,
        "--audience",
        "https://elsewhere.example",
      ],
      { PLATFORM_CONFIG_DIR: freshConfigDir() },
    );
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toMatch(
      /^error: invalid argument: aud: "https:\/\/elsewhere\.example" is not accepted: must be one of http:\/\/localhost:\d+, .* \(choose it with --audience\)\n$/,
    );
  });

  it("rejects --identity-token that is neither a file nor a JWT (exit 2)", async () => {
    const res = await cli(["auth", "login", "--identity", identityUid, "--identity-token", join(tmp, "missing.jwt")]);
    expect(res.code).toBe(2);
    expect(res.stderr).toBe(`error: --identity-token: "${join(tmp, "missing.jwt")}" is neither a file nor a JWT\n`);
  });

  it("auth logout removes the entry; then auth token says to log in", async () => {
    expect(okRun(await cli(["auth", "logout"])).stdout).toBe(`logged out of ${server.url}\n`);
    expect(await tokensFile(dir)).not.toHaveProperty([server.url]);
    const res = await cli(["auth", "token"]);
    expect(res.code).toBe(4);
    expect(res.stderr).toBe(`error: not logged in to ${server.url}: run platformctl auth login\n`);
  });
});

describe("browser login (the loopback listener)", () => {
  /**
   * Starts `auth login --headless …` with `start`: a process (startCli) where the test needs its
   * stdin or exit, else in-process; returns the run and the sign-in URL it printed.
   */
  async function startLogin<P extends { waitForStderr: (pattern: RegExp) => Promise<RegExpExecArray> }>(
    start: (args: string[], env: Record<string, string>) => P,
    dir: string,
    extra: string[] = [],
  ) {
    const p = start(["--api", server.url, "auth", "login", "--headless", ...extra], { PLATFORM_CONFIG_DIR: dir });
    const m = await p.waitForStderr(/^ {2}(http\S+)$/m);
    return { p, url: new URL(m[1]!) };
  }

  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

  it("prints the sign-in URL with redirect, state, invite and org; a wrong state is refused; the right one stores the token", async () => {
    const dir = freshConfigDir();
    const { p, url } = await startLogin(startCli, dir, ["--invite", "the-code", "--org", orgUid]);
    // the auth URL is discovered from /.well-known/openid-configuration (the issuer)
    expect(`${url.origin}${url.pathname}`).toBe(`${server.app.urls.authUrl}/oauth`);
    const redirect = url.searchParams.get("redirect")!;
    const state = url.searchParams.get("state")!;
    expect(redirect).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(state).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(url.searchParams.get("invite")).toBe("the-code");
    expect(url.searchParams.get("org")).toBe(orgUid);

    const wrong = await fetch(`${redirect}?${new URLSearchParams({ state: "forged", token: "evil", expiry: inAnHour() })}`);
    expect(wrong.status).toBe(400);
    expect(await wrong.text()).toContain("state mismatch");
    expect(p.child.exitCode).toBeNull();

    const right = await fetch(`${redirect}?${new URLSearchParams({ state, token: server.token, expiry: inAnHour() })}`);
    expect(right.status).toBe(200);
    expect(await right.text()).toContain("You can close this window");
    const res = await p.done;
    expect(res.code, res.stderr).toBe(0);
    const sub = decodeJwt(server.token).sub!;
    expect(res.stdout).toMatch(new RegExp(`^logged in to ${server.url} as bootstrap \\(identity ${sub}, expires in (59m|1h)\\)\\n$`));
    expect((await tokensFile(dir))[server.url]).toMatchObject({ token: server.token, kind: "browser" });
    expect((await stat(join(dir, "tokens.json"))).mode & 0o777).toBe(0o600);

    // the stored browser token is what later commands use
    const status = okRun(await runCliInProcess(["auth", "status"], { PLATFORM_CONFIG_DIR: dir }));
    expect(status.stdout).toContain(`identity: ${sub}\nname:     bootstrap\n`);
    expect(status.stdout).toContain("kind:     browser\n");
    const created = okRun(await runCliInProcess(["iam", "groups", "create", "from-browser-login"], { PLATFORM_CONFIG_DIR: dir }));
    expect(created.stdout).toContain("from-browser-login");
  });

  it("accepts the callback address pasted on stdin (a browser on another machine)", async () => {
    const dir = freshConfigDir();
    const { p, url } = await startLogin(startCli, dir);
    const callback = `${url.searchParams.get("redirect")}?${new URLSearchParams({ state: url.searchParams.get("state")!, token: server.token, expiry: inAnHour() })}`;
    p.child.stdin.write("not an address\n");
    await p.waitForStderr(/that is not the callback address/);
    p.child.stdin.write(`${callback}\n`);
    const res = await p.done;
    expect(res.code, res.stderr).toBe(0);
    expect((await tokensFile(dir))[server.url]).toMatchObject({ token: server.token, kind: "browser" });
  });

  it("reports an error the server sends back (exit 4) and stores nothing", async () => {
    const dir = freshConfigDir();
    const { p, url } = await startLogin(startCliInProcess, dir);
    const params = new URLSearchParams({
      state: url.searchParams.get("state")!,
      error: "access_denied",
      error_description: "the invite has expired",
    });
    const page = await fetch(`${url.searchParams.get("redirect")}?${params}`);
    expect(await page.text()).toContain("Login failed");
    const res = await p.done;
    expect(res.code).toBe(4);
    expect(res.stderr).toContain("error: login failed: access_denied: the invite has expired\n");
    await expect(stat(join(dir, "tokens.json"))).rejects.toThrow(/ENOENT/);
  });

  it("times out with a clear message (exit 4)", async () => {
    const { p } = await startLogin(startCliInProcess, freshConfigDir(), ["--timeout", "1s"]);
    const res = await p.done;
    expect(res.code).toBe(4);
    expect(res.stderr).toMatch(
      /error: login timed out after 1s: no answer reached http:\/\/127\.0\.0\.1:\d+\/callback; run platformctl auth login again\n$/,
    );
  });

  it("says an expired browser token needs a new login (exit 4)", async () => {
    const dir = freshConfigDir();
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, "tokens.json"),
      JSON.stringify({ [server.url]: { token: server.token, expiry: "2020-01-01T00:00:00Z", kind: "browser" } }),
    );
    const res = await runCliInProcess(["--api", server.url, "auth", "token"], { PLATFORM_CONFIG_DIR: dir });
    expect(res.code).toBe(4);
    expect(res.stderr).toBe("error: token expired: run platformctl auth login\n");
    // within the 30 s margin counts as expired too
    const soon = new Date(Date.now() + 10_000).toISOString();
    await writeFile(join(dir, "tokens.json"), JSON.stringify({ [server.url]: { token: server.token, expiry: soon, kind: "browser" } }));
    expect((await runCliInProcess(["--api", server.url, "iam", "groups", "list"], { PLATFORM_CONFIG_DIR: dir })).code).toBe(4);
  });
});

describe("resource commands", () => {
  it("creates, gets and lists groups as aligned tables", async () => {
    const created = okRun(await asAdmin(["iam", "groups", "create", "my-org", "--description", "our org"]));
    const { header, rows } = tableRows(created.stdout);
    expect(header).toEqual(["UID", "NAME", "DESCRIPTION", "CREATED"]);
    expect(rows).toHaveLength(1);
    const [uid, name, description, createdAt] = rows[0]!;
    expect(uid).toMatch(/^[0-9a-f]{40}$/);
    expect([name, description]).toEqual(["my-org", "our org"]);
    expect(createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);

    const got = tableRows(okRun(await asAdmin(["iam", "groups", "get", uid!])).stdout);
    expect(got.rows).toEqual([[uid, "my-org", "our org", createdAt]]);
    const listed = tableRows(okRun(await asAdmin(["iam", "groups", "list", "--name", "my-org"])).stdout);
    expect(listed.rows).toEqual([[uid, "my-org", "our org", createdAt]]);
  });

  it("-o json prints the REST JSON unchanged", async () => {
    const created = json(await asAdmin(["-o", "json", "iam", "groups", "create", "json-org"]));
    const rest = await ok(admin("GET", `/iam/v2beta1/groups/${created["uid"]}`));
    expect(created).toEqual(rest);
    const listed = json(await asAdmin(["-o", "json", "iam", "groups", "list", "--name", "json-org"]));
    expect(listed).toEqual(await ok(admin("GET", "/iam/v2beta1/groups?name=json-org")));
    const out = (await asAdmin(["-o", "json", "iam", "groups", "get", created["uid"] as string])).stdout;
    expect(out).toBe(`${JSON.stringify(rest, null, 2)}\n`);
  });

  it("update sends only the flags given", async () => {
    const g = json(await asAdmin(["-o", "json", "iam", "groups", "create", "to-rename", "--description", "kept"]));
    const renamed = json(await asAdmin(["-o", "json", "iam", "groups", "update", g["uid"] as string, "--name", "renamed"]));
    expect(renamed).toMatchObject({ name: "renamed", description: "kept" });
    const cleared = json(await asAdmin(["-o", "json", "iam", "groups", "update", g["uid"] as string, "--description", ""]));
    expect(cleared).toMatchObject({ name: "renamed", description: "" });
    // nested fields too: changing the subject keeps the issuer
    const id = json(
      await asAdmin([
        "-o",
        "json",
        "iam",
        "identities",
        "create",
        "bot",
        "--group",
        orgUid,
        "--issuer",
        "https://issuer.example",
        "--subject",
        "a",
      ]),
    );
    const changed = json(await asAdmin(["-o", "json", "iam", "identities", "update", id["uid"] as string, "--subject", "b"]));
    expect(changed["claimMatch"]).toMatchObject({ issuer: "https://issuer.example", subject: "b" });
    expect(changed["name"]).toBe("bot");
    const none = await asAdmin(["iam", "groups", "update", g["uid"] as string]);
    expect(none.code).toBe(2);
    expect(none.stderr).toBe("error: nothing to update: give at least one of --name, --description, --resource-limit\n");
  });

  it("prints a bad name as one line naming the field, exit 2", async () => {
    const res = await asAdmin(["iam", "groups", "create", "Bad Name"]);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe("");
    expect(res.stderr).toBe("error: invalid argument: name: must match the pattern ^[a-z0-9 ._-]{1,}$\n");
  });

  it("refuses to delete a non-empty group with the precondition, exit 5; deletes an empty one", async () => {
    const parent = json(await asAdmin(["-o", "json", "iam", "groups", "create", "parent-of-one"]));
    const child = json(await asAdmin(["-o", "json", "iam", "groups", "create", "the-child", "--parent", parent["uid"] as string]));
    expect(child["uid"]).toMatch(new RegExp(`^${parent["uid"]}/[0-9a-f]{16}$`));
    const res = await asAdmin(["iam", "groups", "delete", parent["uid"] as string]);
    expect(res.code).toBe(5);
    expect(res.stderr).toBe(
      `error: failed precondition (RESOURCE_NOT_EMPTY): group ${parent["uid"]} still holds child groups; delete them first\n`,
    );
    expect(okRun(await asAdmin(["iam", "groups", "delete", child["uid"] as string])).stdout).toBe(`deleted group ${child["uid"]}\n`);
    expect((await admin("GET", `/iam/v2beta1/groups/${child["uid"]}`)).status).toBe(404);
    const missing = await asAdmin(["iam", "groups", "get", child["uid"] as string]);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toBe(`error: not found: group ${child["uid"]}\n`);
  });

  it("list --all follows every page into one table (page size 2)", async () => {
    const parent = json(await asAdmin(["-o", "json", "iam", "groups", "create", "paged"]));
    const names = ["p1", "p2", "p3", "p4", "p5"];
    for (const n of names) okRun(await asAdmin(["iam", "groups", "create", n, "--parent", parent["uid"] as string]));
    const scope = ["--children-of", parent["uid"] as string, "--page-size", "2", "--order-by", "name"];
    const one = await asAdmin(["iam", "groups", "list", ...scope]);
    expect(tableRows(okRun(one).stdout).rows.map((r) => r[1])).toEqual(["p1", "p2"]);
    expect(one.stderr).toMatch(/^more: --page-token \S+ \(or --all\)\n$/);
    const all = okRun(await asAdmin(["iam", "groups", "list", ...scope, "--all"]));
    expect(tableRows(all.stdout).rows.map((r) => r[1])).toEqual(names);
    expect(all.stderr).toBe("");
    const allJson = json(await asAdmin(["-o", "json", "iam", "groups", "list", ...scope, "--all"]));
    expect((allJson["groups"] as JsonObject[]).map((g) => g["name"])).toEqual(names);
    expect(allJson).toMatchObject({ nextPageToken: "", totalCount: "5" });
  });

  it("covers the other resources: identities, roles, role bindings, repos, tags, with their filters", async () => {
    const group = json(await asAdmin(["-o", "json", "iam", "groups", "create", "many-things"]))["uid"] as string;
    const id = json(
      await asAdmin([
        "-o",
        "json",
        "iam",
        "identities",
        "create",
        "worker",
        "--group",
        group,
        "--issuer",
        "https://i.example",
        "--subject",
        "w",
      ]),
    );
    const role = json(
      await asAdmin([
        "-o",
        "json",
        "iam",
        "roles",
        "create",
        "tagger",
        "--group",
        group,
        "--capability",
        "tag.list",
        "--capability",
        "CAP_TAG_CREATE",
      ]),
    );
    // Either spelling in, the enum names out (docs/design.md, "Capability names").
    expect(role["capabilities"]).toEqual(["CAP_TAG_LIST", "CAP_TAG_CREATE"]);
    const rb = json(
      await asAdmin([
        "-o",
        "json",
        "iam",
        "role-bindings",
        "create",
        "--group",
        group,
        "--identity",
        id["uid"] as string,
        "--role",
        role["uid"] as string,
      ]),
    );
    expect(rb).toMatchObject({ identity: { name: "worker" }, role: { uid: role["uid"] } });
    const bindings = tableRows(okRun(await asAdmin(["iam", "role-bindings", "list", "--identity", id["uid"] as string])).stdout);
    expect(bindings.header).toEqual(["UID", "IDENTITY", "ROLE", "GROUP", "CREATED"]);
    expect(bindings.rows.map((r) => r.slice(0, 4))).toEqual([[rb["uid"], "worker", role["uid"], "many-things"]]);
    const byIssuer = json(await asAdmin(["-o", "json", "iam", "identities", "list", "--issuer", "https://i.example"]));
    expect((byIssuer["identities"] as JsonObject[]).map((i) => i["uid"])).toEqual([id["uid"]]);

    const repo = json(await asAdmin(["-o", "json", "registry", "repos", "create", "library/app", "--group", group, "--alias", "app"]));
    const digest = `sha256:${"ab".repeat(32)}`;
    const tag = json(
      await asAdmin(["-o", "json", "registry", "tags", "create", "v1", "--repo", repo["uid"] as string, "--digest", digest]),
    );
    const deprecated = json(await asAdmin(["-o", "json", "registry", "tags", "update", tag["uid"] as string, "--deprecated"]));
    expect(deprecated).toMatchObject({ name: "v1", digest, deprecated: true });
    expect(json(await asAdmin(["-o", "json", "registry", "tags", "update", tag["uid"] as string, "--no-deprecated"]))["deprecated"]).toBe(
      false,
    );
    const tags = json(
      await asAdmin(["-o", "json", "registry", "tags", "list", "--children-of", repo["uid"] as string, "--digest", digest]),
    );
    expect((tags["tags"] as JsonObject[]).map((t) => t["name"])).toEqual(["v1"]);
    const noAliases = json(await asAdmin(["-o", "json", "registry", "repos", "update", repo["uid"] as string, "--no-alias"]));
    expect(noAliases).toMatchObject({ aliases: [], description: "", activeTags: ["v1"] });
  });

  it("iam invites create prints the code, which lists never show", async () => {
    const res = okRun(await asAdmin(["iam", "invites", "create", "--group", orgUid, "--role", "viewer", "--ttl", "24h", "--single-use"]));
    const code = res.stdout.trim();
    expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(res.stderr).toContain("platformctl auth login --invite <code>");
    const list = json(await asAdmin(["-o", "json", "iam", "invites", "list", "--children-of", orgUid]));
    const invites = list["groupInvites"] as JsonObject[];
    expect(invites).toHaveLength(1);
    expect(invites[0]).toMatchObject({ roleUid: "viewer", singleUse: true });
    expect(invites[0]).not.toHaveProperty("code");
    const lifetime = Date.parse(invites[0]!["expirationTime"] as string) - Date.parse(invites[0]!["createTime"] as string);
    expect(lifetime).toBe(24 * 3600 * 1000);
    const badTtl = await asAdmin(["iam", "invites", "create", "--group", orgUid, "--role", "viewer", "--ttl", "soon"]);
    expect(badTtl.code).toBe(2);
    expect(badTtl.stderr).toBe('error: --ttl: "soon" is not a duration (e.g. 90s, 15m, 24h, 7d, 1h30m)\n');
  });
});

describe("commands derived from the protos", () => {
  it("every v2beta1 resource service the server exposes has list and get commands at its REST path", () => {
    const resources = API_SERVICES.map((a) => a.service).filter(
      (s) =>
        s.typeName.includes(".v2beta1.") &&
        s.methods.some((m) => standardMethodOf(m) === "List") &&
        s.methods.some((m) => standardMethodOf(m) === "Get"),
    );
    expect(resources.length).toBeGreaterThanOrEqual(11);
    const groups: Command[] = [];
    const walk = (cmd: Command) => {
      groups.push(cmd);
      cmd.commands.forEach(walk);
    };
    walk(buildProgram());
    for (const service of resources) {
      // the path from the descriptors, not from the CLI's own tables
      const { path } = deriveResourceSpec(service);
      const group = groups.find((g) => g.description().endsWith(`: ${path}`));
      expect(group, service.typeName).toBeDefined();
      expect(
        group!.commands.map((c) => c.name()),
        service.typeName,
      ).toEqual(expect.arrayContaining(["list", "get"]));
    }
  });

  it("a writable field the hand-written flags lacked now has one: identities --audience-pattern", async () => {
    const id = json(
      await asAdmin([
        "-o",
        "json",
        "iam",
        "identities",
        "create",
        "aud-bot",
        "--group",
        orgUid,
        "--issuer",
        "https://i.example",
        "--audience-pattern",
        "api-.*",
      ]),
    );
    expect(id["claimMatch"]).toMatchObject({ issuer: "https://i.example", audiencePattern: "api-.*" });
    const changed = json(await asAdmin(["-o", "json", "iam", "identities", "update", id["uid"] as string, "--audience-pattern", "web-.*"]));
    expect(changed["claimMatch"]).toMatchObject({ issuer: "https://i.example", audiencePattern: "web-.*" });
  });

  it("fields a required sub-message requires are required flags: identity-providers create without --client-id (exit 2)", async () => {
    const res = await asAdmin(["iam", "identity-providers", "create", "idp", "--group", orgUid, "--issuer", "https://i.example"]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^error: required option '--client-id <id>' not specified/);
  });
});

describe("events (docs/events.md)", () => {
  it("events list --in-root shows a group's creation and its owner binding with their actor, as the REST list does", async () => {
    const org = json(await asAdmin(["-o", "json", "iam", "groups", "create", "events-listed"]))["uid"] as string;
    const listed = json(await asAdmin(["-o", "json", "events", "list", "--in-root", org]));
    expect(listed).toEqual(await ok(admin("GET", `/events/v2beta1/events?uidp.in_root=${org}`)));
    // The group, then its creator made its owner.
    expect(listed).toMatchObject({ totalCount: "2", nextPageToken: "" });
    const [created, owner] = listed["events"] as JsonObject[];
    expect(created).toMatchObject({
      type: "platform.iam.group.created.v1",
      subject: org,
      group: org,
      actor: decodeJwt(server.token).sub,
      data: { after: { uid: org, name: "events-listed" } },
    });
    expect(owner).toMatchObject({ type: "platform.iam.role_binding.created.v1", group: org, actor: decodeJwt(server.token).sub });
    // the filters are query parameters: no group update happened
    const none = json(await asAdmin(["-o", "json", "events", "list", "--in-root", org, "--type", "platform.iam.group.updated.v1"]));
    expect(none).toMatchObject({ events: [], totalCount: "0" });
  });

  it("events watch --count 1 -o json prints one JSON line for a change made while it runs, then exits", async () => {
    const org = json(await asAdmin(["-o", "json", "iam", "groups", "create", "events-watched"]))["uid"] as string;
    const watching = server.app.eventHub.size;
    const run = startCliInProcess(["--api", server.url, "-o", "json", "events", "watch", "--in-root", org, "--count", "1"], {
      PLATFORM_CONFIG_DIR: freshConfigDir(),
      PLATFORM_TOKEN: server.token,
    });
    run.stdin.end();
    // The server counts the stream once it listens; a change made before that would not be streamed.
    for (let i = 0; i < 250 && server.app.eventHub.size <= watching; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.app.eventHub.size).toBeGreaterThan(watching);
    const repo = await ok(admin("POST", `/registry/v2beta1/repos/${org}`, { name: "watched" }));
    const res = okRun(await run.done);
    const lines = res.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      type: "platform.registry.repo.created.v1",
      subject: repo["uid"],
      group: org,
      actor: decodeJwt(server.token).sub,
      data: { after: { uid: repo["uid"], name: "watched" } },
    });
    expect(res.stderr).toBe("");
    // the stream is closed once the command is done
    for (let i = 0; i < 100 && server.app.eventHub.size > watching; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.app.eventHub.size).toBe(watching);
  });

  it("events watch ends with the server's reason (exit 4) when its identity is deleted: a token that has not expired is not renewed", async () => {
    const identity = (
      await ok(
        admin("POST", `/iam/v2beta1/identities/${orgUid}`, {
          name: "short-lived",
          claimMatch: { issuer: provider.issuer, subject: "short-lived" },
        }),
      )
    )["uid"] as string;
    await ok(admin("POST", `/iam/v2beta1/roleBindings/${orgUid}`, { identityUid: identity, roleUid: "viewer" }));
    const minted = await server.app.tokens.mint(identity, server.app.urls.baseUrl);
    const dir = freshConfigDir();
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, "tokens.json"),
      JSON.stringify({ [server.url]: { token: minted.token, expiry: minted.expiry.toISOString(), kind: "browser" } }),
    );
    const watching = server.app.eventHub.size;
    const run = startCliInProcess(["--api", server.url, "events", "watch", "--in-root", orgUid], { PLATFORM_CONFIG_DIR: dir });
    run.stdin.end();
    for (let i = 0; i < 250 && server.app.eventHub.size <= watching; i++) await new Promise((r) => setTimeout(r, 20));
    expect(server.app.eventHub.size).toBeGreaterThan(watching);
    await ok(admin("DELETE", `/iam/v2beta1/identities/${identity}`));
    const res = await run.done;
    expect(res.code).toBe(4);
    expect(res.stderr).toContain("no longer exists");
  });

  it("events subscriptions create prints the signing secret, which get and list never show", async () => {
    const org = json(await asAdmin(["-o", "json", "iam", "groups", "create", "events-subscribed"]))["uid"] as string;
    const args = [
      "--group",
      org,
      "--sink",
      "https://example.com/hook",
      "--type",
      "platform.iam.role_binding.",
      "--description",
      "from the cli",
    ];
    const created = json(await asAdmin(["-o", "json", "events", "subscriptions", "create", ...args]));
    const uid = created["uid"] as string;
    expect(uid).toMatch(new RegExp(`^${org}/[0-9a-f]{16}$`));
    expect(created).toMatchObject({ sink: "https://example.com/hook", types: ["platform.iam.role_binding."], description: "from the cli" });
    expect(created["secret"]).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const got = json(await asAdmin(["-o", "json", "events", "subscriptions", "get", uid]));
    expect(got).not.toHaveProperty("secret");
    expect(got).toMatchObject({ uid, deliveredCount: "0", pendingCount: "0", failedCount: "0" });
    const listed = json(await asAdmin(["-o", "json", "events", "subscriptions", "list", "--children-of", org]));
    expect((listed["subscriptions"] as JsonObject[]).map((s) => s["uid"])).toEqual([uid]);
    expect(JSON.stringify(listed)).not.toContain(created["secret"] as string);
    // nor does the event of its creation
    const events = json(await asAdmin(["-o", "json", "events", "list", "--subject", uid]));
    expect((events["events"] as JsonObject[]).map((e) => e["type"])).toEqual(["platform.events.subscription.created.v1"]);
    expect(JSON.stringify(events)).not.toContain(created["secret"] as string);
    // a private sink is refused naming the field, exit 2
    const refused = await asAdmin(["events", "subscriptions", "create", "--group", org, "--sink", "https://10.0.0.1/hook"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error: invalid argument: sink: /);
    expect(okRun(await asAdmin(["events", "subscriptions", "delete", uid])).stdout).toBe(`deleted subscription ${uid}\n`);
    // The table output's result is the secret itself (what it is goes to stderr).
    const tabled = okRun(await asAdmin(["events", "subscriptions", "create", ...args]));
    expect(tabled.stdout).toMatch(/^whsec_[A-Za-z0-9+/]{43}=\n$/);
    expect(tabled.stderr).toContain("shown only now");
  });
});

describe("advisories import", () => {
  const osv = (id: string, modified: string, extra: JsonObject = {}) => ({ id, modified, summary: `about ${id}`, ...extra });

  it("imports two files (a document and an array) with a summary; again: unchanged", async () => {
    const one = join(tmp, "one.json");
    const many = join(tmp, "many.json");
    await writeFile(one, JSON.stringify(osv("GHSA-cli1-aaaa-bbbb", "2024-03-01T10:00:00Z", { aliases: ["CVE-2024-0001"] })));
    await writeFile(many, JSON.stringify([osv("PYSEC-2024-901", "2024-01-01T00:00:00Z"), osv("PYSEC-2024-902", "2024-01-01T00:00:00Z")]));
    const first = okRun(await asAdmin(["advisories", "import", one, many]));
    expect(first.stdout).toBe("imported 3 of 3 documents from 2 files: 3 created, 0 updated, 0 unchanged, 0 skipped (older)\n");
    // stderr is not a terminal here: no progress bar
    expect(first.stderr).toBe("");
    const again = json(await asAdmin(["-o", "json", "advisories", "import", one, many, "--batch-size", "2"]));
    expect(again["results"]).toEqual([
      { index: 0, advisoryId: "GHSA-cli1-aaaa-bbbb", uid: "GHSA-cli1-aaaa-bbbb", outcome: "OUTCOME_UNCHANGED" },
      { index: 1, advisoryId: "PYSEC-2024-901", uid: "PYSEC-2024-901", outcome: "OUTCOME_UNCHANGED" },
      { index: 2, advisoryId: "PYSEC-2024-902", uid: "PYSEC-2024-902", outcome: "OUTCOME_UNCHANGED" },
    ]);
    const listed = tableRows(okRun(await asAdmin(["advisories", "list", "--alias", "CVE-2024-0001"])).stdout);
    expect(listed.header).toEqual(["UID", "ALIASES", "COMPONENT", "TYPE", "MODIFIED", "SUMMARY"]);
    expect(listed.rows.map((r) => [r[0], r[1], r[4], r[5]])).toEqual([
      ["GHSA-cli1-aaaa-bbbb", "CVE-2024-0001", "2024-03-01T10:00:00Z", "about GHSA-cli1-aaaa-bbbb"],
    ]);
    expect(json(await asAdmin(["-o", "json", "advisories", "get", "PYSEC-2024-901"]))["summary"]).toBe("about PYSEC-2024-901");
  });

  it("draws a progress bar when stderr is a terminal", async () => {
    const docs = join(tmp, "progress.json");
    await writeFile(docs, JSON.stringify([1, 2, 3, 4].map((i) => osv(`PYSEC-2024-92${i}`, "2024-01-01T00:00:00Z"))));
    const res = await runCliInTerminal(["--api", server.url, "advisories", "import", docs, "--batch-size", "1"], {
      PLATFORM_CONFIG_DIR: freshConfigDir(),
      PLATFORM_TOKEN: server.token,
    });
    expect(res.code, res.output).toBe(0);
    expect(res.output).toMatch(/importing \[[░█]+\] 0\/4 documents/);
    expect(res.output).toContain("imported 4 of 4 documents from 1 file: 4 created, 0 updated, 0 unchanged, 0 skipped (older)");
  });

  const advisoryStatus = async (uid: string) => (await admin("GET", `/vulnerabilities/v2beta1/advisories/${uid}`)).status;

  it("imports every good document of a batch with a bad one, naming the bad one's file and index (exit 2)", async () => {
    const a = join(tmp, "a.json");
    const b = join(tmp, "b.json");
    await writeFile(a, JSON.stringify([osv("PYSEC-2024-931", "2024-01-01T00:00:00Z"), osv("PYSEC-2024-932", "2024-01-01T00:00:00Z")]));
    // entry 1 lacks `modified`; all four go in one call (the default batch size), which the server refuses whole
    await writeFile(b, JSON.stringify([osv("PYSEC-2024-933", "2024-01-01T00:00:00Z"), { id: "PYSEC-2024-934" }]));
    const res = await asAdmin(["advisories", "import", a, b]);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe("imported 3 of 4 documents from 2 files: 3 created, 0 updated, 0 unchanged, 0 skipped (older), 1 failed\n");
    expect(res.stderr).toBe(`error: ${b}[1]: invalid argument: modified: is required\nerror: 1 of 4 documents was not imported\n`);
    for (const uid of ["PYSEC-2024-931", "PYSEC-2024-932", "PYSEC-2024-933"]) expect(await advisoryStatus(uid), uid).toBe(200);
    expect(await advisoryStatus("PYSEC-2024-934")).toBe(404);

    // -o json: the results keep their place among all the documents; the bad one has none
    const again = await asAdmin(["-o", "json", "advisories", "import", a, b]);
    expect(again.code).toBe(2);
    expect((JSON.parse(again.stdout) as JsonObject)["results"]).toEqual([
      { index: 0, advisoryId: "PYSEC-2024-931", uid: "PYSEC-2024-931", outcome: "OUTCOME_UNCHANGED" },
      { index: 1, advisoryId: "PYSEC-2024-932", uid: "PYSEC-2024-932", outcome: "OUTCOME_UNCHANGED" },
      { index: 2, advisoryId: "PYSEC-2024-933", uid: "PYSEC-2024-933", outcome: "OUTCOME_UNCHANGED" },
    ]);
    expect(again.stderr).toContain(
      "imported 3 of 4 documents from 2 files: 0 created, 0 updated, 3 unchanged, 0 skipped (older), 1 failed\n",
    );
  });

  it("reports every bad document with all its fields, across batches, and entries that are not objects", async () => {
    const mixed = join(tmp, "mixed.json");
    const single = join(tmp, "single-bad.json");
    await writeFile(
      mixed,
      JSON.stringify([
        { summary: "no id, no modified" },
        osv("PYSEC-2024-941", "2024-01-01T00:00:00Z"),
        42,
        osv("PYSEC-2024-942", "not a time"),
        osv("PYSEC-2024-943", "2024-01-01T00:00:00Z"),
      ]),
    );
    // a file holding one document has no index to name
    await writeFile(single, JSON.stringify({ id: "PYSEC-2024-944" }));
    const res = await asAdmin(["advisories", "import", mixed, single, "--batch-size", "2"]);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe("imported 2 of 6 documents from 2 files: 2 created, 0 updated, 0 unchanged, 0 skipped (older), 4 failed\n");
    const lines = res.stderr.trimEnd().split("\n");
    expect(lines[0]).toBe(`error: ${mixed}[2]: an OSV document must be a JSON object`);
    expect(lines[1]).toBe(`error: ${mixed}[0]: invalid argument: id: is required; modified: is required`);
    expect(lines[2]).toMatch(new RegExp(`^error: ${escapeRe(mixed)}\\[3\\]: invalid argument: modified: `));
    expect(lines[3]).toBe(`error: ${single}: invalid argument: modified: is required`);
    expect(lines[4]).toBe("error: 4 of 6 documents were not imported");
    expect(lines).toHaveLength(5);
    for (const uid of ["PYSEC-2024-941", "PYSEC-2024-943"]) expect(await advisoryStatus(uid), uid).toBe(200);
    for (const uid of ["PYSEC-2024-942", "PYSEC-2024-944"]) expect(await advisoryStatus(uid), uid).toBe(404);
  });

  it("reports a document over the body limit (sent alone) and imports the others", async () => {
    const docs = join(tmp, "huge.json");
    const huge = osv("PYSEC-2024-952", "2024-01-01T00:00:00Z", { details: "x".repeat(1_100_000) });
    await writeFile(
      docs,
      JSON.stringify([osv("PYSEC-2024-951", "2024-01-01T00:00:00Z"), huge, osv("PYSEC-2024-953", "2024-01-01T00:00:00Z")]),
    );
    const res = await asAdmin(["advisories", "import", docs]);
    expect(res.stdout).toBe("imported 2 of 3 documents from 1 file: 2 created, 0 updated, 0 unchanged, 0 skipped (older), 1 failed\n");
    expect(res.stderr).toBe(
      `error: ${docs}[1]: invalid argument: body: is larger than the limit of 1048576 bytes\nerror: 1 of 3 documents was not imported\n`,
    );
    expect(res.code).toBe(2);
    for (const uid of ["PYSEC-2024-951", "PYSEC-2024-953"]) expect(await advisoryStatus(uid), uid).toBe(200);
    expect(await advisoryStatus("PYSEC-2024-952")).toBe(404);
  });

  it("sends the documents one by one when the server's error names none of them", async () => {
    // A stand-in for the server refusing a call for a value its database cannot store: the error
    // names `request`, not a document (src/errors/constructors.ts); alone, each document gets its own answer.
    const calls: number[] = [];
    const stub = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (d: Buffer) => (body += d.toString()));
      req.on("end", () => {
        const documents = (JSON.parse(body) as { documents: JsonObject[] }).documents;
        calls.push(documents.length);
        res.setHeader("content-type", "application/json");
        if (documents.length > 1 || documents[0]!["id"] === "STUB-2") {
          res.statusCode = 400;
          const violation = { field: "request", description: "contains a value that cannot be stored" };
          const badRequest = { "@type": "type.googleapis.com/google.rpc.BadRequest", fieldViolations: [violation] };
          res.end(JSON.stringify({ code: 3, message: `Invalid argument: request: ${violation.description}`, details: [badRequest] }));
        } else {
          const id = documents[0]!["id"];
          res.end(JSON.stringify({ results: [{ index: 0, advisoryId: id, uid: id, outcome: "OUTCOME_CREATED" }] }));
        }
      });
    });
    await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
    try {
      const docs = join(tmp, "stub.json");
      await writeFile(docs, JSON.stringify(["STUB-1", "STUB-2", "STUB-3"].map((id) => osv(id, "2024-01-01T00:00:00Z"))));
      const res = await runCliInProcess(
        ["--api", `http://127.0.0.1:${(stub.address() as AddressInfo).port}`, "advisories", "import", docs],
        {
          PLATFORM_CONFIG_DIR: freshConfigDir(),
          PLATFORM_TOKEN: "stub-token",
        },
      );
      expect(res.code).toBe(2);
      expect(calls).toEqual([3, 1, 1, 1]);
      expect(res.stdout).toBe("imported 2 of 3 documents from 1 file: 2 created, 0 updated, 0 unchanged, 0 skipped (older), 1 failed\n");
      expect(res.stderr).toBe(
        `error: ${docs}[1]: invalid argument: request: contains a value that cannot be stored\nerror: 1 of 3 documents was not imported\n`,
      );
    } finally {
      await new Promise((resolve) => stub.close(resolve));
    }
  });

  it("reports files that cannot be read or are not JSON, and imports the others (exit 2)", async () => {
    const notJson = join(tmp, "broken.json");
    const missing = join(tmp, "no-such-file.json");
    const fine = join(tmp, "fine.json");
    await writeFile(notJson, "{ nope");
    await writeFile(fine, JSON.stringify(osv("PYSEC-2024-961", "2024-01-01T00:00:00Z")));
    const res = await asAdmin(["advisories", "import", notJson, missing, fine]);
    expect(res.code).toBe(2);
    expect(res.stdout).toBe(
      "imported 1 of 1 document from 3 files: 1 created, 0 updated, 0 unchanged, 0 skipped (older); 2 files could not be read\n",
    );
    const lines = res.stderr.trimEnd().split("\n");
    expect(lines[0]).toMatch(new RegExp(`^error: ${escapeRe(notJson)}: not JSON: `));
    expect(lines.slice(1)).toEqual([`error: ${missing}: cannot read: ENOENT`, "error: 2 files could not be read"]);
    expect(await advisoryStatus("PYSEC-2024-961")).toBe(200);
  });
});
