import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";
import { withSystemTmpdir } from "./scratch.js";

/** bin/platformctl.js: the launcher a user runs. */
export const LAUNCHER = fileURLToPath(new URL("../../bin/platformctl.js", import.meta.url));

// Variables of the caller's shell that would change what the CLI talks to.
const CLI_VARIABLES = ["PLATFORM_API", "PLATFORM_TOKEN", "PLATFORM_CONFIG_DIR", "XDG_CONFIG_HOME", "BROWSER"];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A running platformctl: its output so far, and a way to wait for text or the end. */
export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with stderr once it matches `pattern`; rejects when the process ends first. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  done: Promise<CliResult>;
}

/** The caller's environment without CLI_VARIABLES, plus `env`: what a run of platformctl sees. */
export function cliEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  // Where dist/ is older than a source, the launcher runs the sources through tsx, whose compile cache is in TMPDIR.
  const base: NodeJS.ProcessEnv = withSystemTmpdir(process.env);
  for (const name of CLI_VARIABLES) delete base[name];
  return { ...base, ...env };
}

/** Output collected as it arrives, and waits for stderr to match (for both runners: a process, in-process). */
export class OutputWatch {
  stdout = "";
  stderr = "";
  private readonly watchers = new Set<() => void>();

  /** `done` settles when the run ends: a wait still pending then rejects. */
  constructor(private readonly done: Promise<unknown>) {}

  addStdout(text: string): void {
    this.stdout += text;
  }

  addStderr(text: string): void {
    this.stderr += text;
    for (const w of this.watchers) w();
  }

  waitForStderr(pattern: RegExp, timeoutMs = 15_000): Promise<RegExpExecArray> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(this.stderr);
        if (m) {
          cleanup();
          resolve(m);
        }
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error(`stderr did not match ${pattern} in ${timeoutMs} ms: ${this.stderr}`));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.watchers.delete(check);
      };
      this.watchers.add(check);
      void this.done.then(() => {
        if (this.watchers.has(check)) {
          cleanup();
          reject(new Error(`platformctl ended before stderr matched ${pattern}: ${this.stderr}`));
        }
      });
      check();
    });
  }
}

/** Starts `node bin/platformctl.js …args` (the real launcher) with its own environment additions. */
export function startCli(args: string[], env: Record<string, string>): CliProcess {
  const child = spawn(process.execPath, [LAUNCHER, ...args], { env: cliEnv(env), stdio: "pipe" });
  const done = new Promise<CliResult>((resolve) =>
    child.on("close", (code) => resolve({ code, stdout: output.stdout, stderr: output.stderr })),
  );
  const output = new OutputWatch(done);
  child.stdout.on("data", (d: Buffer) => output.addStdout(d.toString()));
  child.stderr.on("data", (d: Buffer) => output.addStderr(d.toString()));
  return {
    child,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    done,
    waitForStderr: (pattern, timeoutMs) => output.waitForStderr(pattern, timeoutMs),
  };
}

/** Runs platformctl to the end; stdin gets `input` (or nothing) and is closed. */
export async function runCli(args: string[], env: Record<string, string>, input = ""): Promise<CliResult> {
  const p = startCli(args, env);
  p.child.stdin.end(input);
  return p.done;
}

const shellQuote = (arg: string) => `'${arg.replace(/'/g, `'\\''`)}'`;

/**
 * Runs platformctl with a terminal as stdout and stderr (through util-linux
 * `script`), for what it only does on a TTY; the output is both streams as the terminal got them.
 */
export async function runCliInTerminal(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, LAUNCHER, ...args].map(shellQuote).join(" ");
  const child = spawn("script", ["-q", "-e", "-c", command, "/dev/null"], { env: cliEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr.on("data", (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, output };
}
