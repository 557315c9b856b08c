import { EXIT } from "./errors.js";
import { processIo } from "./io.js";
import { runCli } from "./run.js";

// `platformctl … | head`: a reader that has gone away is not an error.
process.stdout.on("error", (e: NodeJS.ErrnoException) => {
  if (e.code === "EPIPE") process.exit(process.exitCode ?? EXIT.ok);
  throw e;
});

// The exit code is set, not exited with: stdout is written out before the process ends.
process.exitCode = await runCli(process.argv.slice(2), processIo());
