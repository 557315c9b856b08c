import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";

const LAUNCHER = fileURLToPath(new URL("../../bin/platformctl.js", import.meta.url));

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

function cliEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const name of CLI_VARIABLES) delete base[name];
  return { ...base, ...env };
}

/** Starts `node bin/platformctl.js …args` (the real launcher) with its own environment additions. */
export function startCli(args: string[], env: Record<string, string>): CliProcess {
  const child = spawn(process.execPath, [LAUNCHER, ...args], { env: cliEnv(env), stdio: "pipe" });
  let out = "";
  let err = "";
  const watchers = new Set<() => void>();
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
    for (const w of watchers) w();
  });
  const done = new Promise<CliResult>((resolve) => child.on("close", (code) => resolve({ code, stdout: out, stderr: err })));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    done,
    waitForStderr(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = pattern.exec(err);
          if (m) {
            cleanup();
            resolve(m);
          }
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`stderr did not match ${pattern} in ${timeoutMs} ms: ${err}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          watchers.delete(check);
        };
        watchers.add(check);
        void done.then(() => {
          if (watchers.has(check)) {
            cleanup();
            reject(new Error(`platformctl ended before stderr matched ${pattern}: ${err}`));
          }
        });
        check();
      });
    },
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
