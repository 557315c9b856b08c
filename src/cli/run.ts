import { CommanderError } from "commander";
import { describeError, EXIT } from "./errors.js";
import type { CliIo } from "./io.js";
import { buildProgram } from "./program.js";

/**
 * Runs one platformctl command line (`argv` without node and the script) and
 * resolves with its exit code; it never exits the process, so main.ts sets the
 * code and tests call it in-process. Every failure becomes one `error:` line on
 * stderr (docs/cli.md, "Errors and exit codes").
 */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    await buildProgram(io).parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // commander has printed the message or the help already.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const { line, exitCode } = describeError(e);
    io.stderr.write(`error: ${line}\n`);
    return exitCode;
  }
}
