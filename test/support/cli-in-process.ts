import { PassThrough, Writable } from "node:stream";
import { runCli } from "../../src/cli/run.js";
import { cliEnv, OutputWatch, type CliResult } from "./cli-process.js";

/**
 * A platformctl run inside the test process: the same `runCli` that
 * bin/platformctl.js runs, with its own environment and streams, without a
 * node + tsx start per command. The wiring of the real process (exit codes,
 * pipes, a terminal) is what the few tests through startCli/runCli still check.
 */
export interface InProcessCli {
  /** What the CLI reads as stdin; `end()` it when it has nothing more to say. */
  stdin: PassThrough;
  stdout(): string;
  stderr(): string;
  /** Resolves with stderr once it matches `pattern`; rejects when the run ends first. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  done: Promise<CliResult>;
}

// Not a terminal (no isTTY): as with a pipe, no progress bar and no colours.
function collector(add: (text: string) => void): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      add(chunk.toString());
      callback();
    },
  });
}

/** Starts `platformctl …args` in-process; the environment is built as for a process (cliEnv). */
export function startCliInProcess(args: string[], env: Record<string, string>): InProcessCli {
  const stdin = new PassThrough();
  let settle!: (result: CliResult) => void;
  const done = new Promise<CliResult>((resolve) => (settle = resolve));
  const output = new OutputWatch(done);
  const io = {
    env: cliEnv(env),
    stdin,
    stdout: collector((text) => output.addStdout(text)),
    stderr: collector((text) => output.addStderr(text)),
  };
  void runCli(args, io).then(
    (code) => settle({ code, stdout: output.stdout, stderr: output.stderr }),
    // runCli turns every error into a code; one escaping it is a bug in the test or the CLI.
    (e: unknown) => settle({ code: null, stdout: output.stdout, stderr: `${output.stderr}(runCli threw) ${String(e)}\n` }),
  );
  return {
    stdin,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    done,
    waitForStderr: (pattern, timeoutMs) => output.waitForStderr(pattern, timeoutMs),
  };
}

/** Runs platformctl in-process to the end; stdin gets `input` (or nothing) and is closed. */
export async function runCliInProcess(args: string[], env: Record<string, string>, input = ""): Promise<CliResult> {
  const run = startCliInProcess(args, env);
  run.stdin.end(input);
  return run.done;
}
