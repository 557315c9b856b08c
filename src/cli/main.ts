import { CommanderError } from "commander";
import { describeError, EXIT } from "./errors.js";
import { buildProgram } from "./program.js";

// `platformctl … | head`: a reader that has gone away is not an error.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(process.exitCode ?? EXIT.ok);
  throw e;
});

try {
  await buildProgram().parseAsync(process.argv);
} catch (e) {
  if (e instanceof CommanderError) {
    // commander has printed the message or the help already.
    process.exitCode = e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  } else {
    const { line, exitCode } = describeError(e);
    process.stderr.write(`error: ${line}\n`);
    process.exitCode = exitCode;
  }
}
