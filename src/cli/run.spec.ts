import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough, Writable } from "node:stream";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { CliIo, CliOutput } from "./io.js";
import { buildProgram } from "./program.js";
import { runCli } from "./run.js";

// runCli takes everything from the io it is given (src/cli/io.ts): these runs give an
// environment and streams of their own and check that the process's are left alone.

interface Captured {
  io: CliIo & { stdin: PassThrough };
  stdout(): string;
  stderr(): string;
}

function output(add: (text: string) => void, terminal?: { columns: number; colors: boolean }): CliOutput {
  const stream: CliOutput = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      add(chunk.toString());
      callback();
    },
  });
  if (terminal) Object.assign(stream, { isTTY: true, columns: terminal.columns, hasColors: () => terminal.colors });
  return stream;
}

function capture(env: NodeJS.ProcessEnv, terminal?: { columns: number; colors: boolean }): Captured {
  let out = "";
  let err = "";
  const io = {
    env,
    stdin: new PassThrough(),
    stdout: output((t) => (out += t), terminal),
    stderr: output((t) => (err += t), terminal),
  };
  return { io, stdout: () => out, stderr: () => err };
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "platformctl-run-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("runCli", () => {
  it("writes the help to the given stdout and resolves 0, writing nothing to the process's streams", async () => {
    const processOut = vi.spyOn(process.stdout, "write");
    const processErr = vi.spyOn(process.stderr, "write");
    const run = capture({});
    expect(await runCli(["--help"], run.io)).toBe(0);
    expect(run.stdout()).toContain("Usage: platformctl [options] [command]");
    expect(run.stderr()).toBe("");
    expect(processOut).not.toHaveBeenCalled();
    expect(processErr).not.toHaveBeenCalled();
  });

  it("resolves 2 on a usage error, commander's message on the given stderr", async () => {
    const exit = vi.spyOn(process, "exit");
    const run = capture({});
    expect(await runCli(["iam", "groups", "frobnicate"], run.io)).toBe(2);
    expect(run.stderr()).toBe("error: unknown command 'frobnicate'\n(run with --help for usage)\n");
    expect(run.stdout()).toBe("");
    expect(exit).not.toHaveBeenCalled();
  });

  it("prints a command's failure as one error line on the given stderr, with its exit code", async () => {
    const run = capture({});
    expect(await runCli(["--api", "not a url", "iam", "groups", "list"], run.io)).toBe(2);
    expect(run.stderr()).toBe('error: --api: "not a url" is not a URL\n');
  });

  it("reads the given environment, not the process's", async () => {
    expect(process.env["PLATFORM_API"]).not.toBe("http://api.from-io.example");
    const run = capture({ PLATFORM_API: "http://api.from-io.example", PLATFORM_CONFIG_DIR: join(dir, "env") });
    expect(await runCli(["auth", "logout"], run.io)).toBe(0);
    expect(run.stdout()).toBe("not logged in to http://api.from-io.example\n");
  });

  it("wraps the help at the given stdout's width when it is a terminal, at 80 columns when not", async () => {
    // `iam`'s description: a paragraph of some 130 characters, the second block of its help
    const description = (help: string) =>
      help
        .split("\n\n")[1]!
        .split("\n")
        .map((l) => l.length);
    const narrow = capture({}, { columns: 50, colors: false });
    await runCli(["iam", "--help"], narrow.io);
    expect(description(narrow.stdout()).length).toBeGreaterThan(2);
    expect(Math.max(...description(narrow.stdout()))).toBeLessThanOrEqual(50);
    const piped = capture({});
    await runCli(["iam", "--help"], piped.io);
    expect(Math.max(...description(piped.stdout()))).toBeGreaterThan(50);
    expect(Math.max(...description(piped.stdout()))).toBeLessThanOrEqual(80);
  });

  it("decides colours from the given streams and environment (NO_COLOR, FORCE_COLOR)", () => {
    const colours = (env: NodeJS.ProcessEnv, terminal?: { columns: number; colors: boolean }) => {
      const out = buildProgram(capture(env, terminal).io).configureOutput();
      return [out.getOutHasColors!(), out.getErrHasColors!()];
    };
    expect(colours({})).toEqual([false, false]);
    expect(colours({}, { columns: 80, colors: true })).toEqual([true, true]);
    expect(colours({ NO_COLOR: "1" }, { columns: 80, colors: true })).toEqual([false, false]);
    expect(colours({ FORCE_COLOR: "1" })).toEqual([true, true]);
  });

  describe("auth login --headless", () => {
    // Stands in for the API: no discovery document (the auth URL is the API's) and no identity to name.
    let api: Server;
    let apiUrl: string;
    beforeAll(async () => {
      api = createServer((_req, res) => res.writeHead(404).end());
      await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
      apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    });
    afterAll(async () => {
      await new Promise((resolve) => api.close(resolve));
    });

    it("reads the pasted callback address from the given stdin, and closes it when done", async () => {
      const config = join(dir, "login");
      const run = capture({ PLATFORM_CONFIG_DIR: config });
      const done = runCli(["--api", apiUrl, "auth", "login", "--headless"], run.io);
      await vi.waitFor(() => expect(run.stderr()).toContain("or paste the address"));
      const signIn = new URL(/^ {2}(http\S+)$/m.exec(run.stderr())![1]!);
      expect(`${signIn.origin}${signIn.pathname}`).toBe(`${apiUrl}/oauth`);
      run.io.stdin.write("not an address\n");
      await vi.waitFor(() => expect(run.stderr()).toContain("that is not the callback address of this login; paste the whole address\n"));
      const token = `x.${Buffer.from(JSON.stringify({ sub: "0123abcd" })).toString("base64url")}.y`;
      const expiry = new Date(Date.now() + 3_600_000).toISOString();
      const callback = `${signIn.searchParams.get("redirect")}?${new URLSearchParams({ state: signIn.searchParams.get("state")!, token, expiry })}`;
      run.io.stdin.write(`${callback}\n`);
      expect(await done, run.stderr()).toBe(0);
      expect(run.stdout()).toMatch(new RegExp(`^logged in to ${apiUrl} as identity 0123abcd \\(expires in (59m|1h)\\)\\n$`));
      expect(JSON.parse(await readFile(join(config, "tokens.json"), "utf8"))).toMatchObject({ [apiUrl]: { token, kind: "browser" } });
      expect(run.io.stdin.destroyed).toBe(true);
    });
  });
});
