import { readFileSync } from "node:fs";
import { Command, CommanderError, Option } from "commander";
import { registerAdvisories } from "./commands/advisories.js";
import { registerAuth } from "./commands/auth.js";
import { registerIam } from "./commands/iam.js";
import { registerRegistry } from "./commands/registry.js";
import { describeError, EXIT } from "./errors.js";

const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };

/** platformctl: the command-line client of the Platform API (README: Command-line tool). */
export function buildProgram(): Command {
  const program = new Command("platformctl")
    .description("command-line client of the Platform API v2")
    .version(version)
    .option("--api <url>", "the API URL (default: $PLATFORM_API, then the last one logged in to, then http://localhost:8080)")
    .addOption(new Option("-o, --output <format>", "table (aligned columns) or json (the REST JSON)").choices(["table", "json"]).default("table"))
    // Sub-commands inherit these: usage errors throw instead of exiting, so they get exit code 2.
    .exitOverride()
    .showHelpAfterError("(run with --help for usage)");
  registerAuth(program);
  registerIam(program);
  registerRegistry(program);
  registerAdvisories(program);
  return program;
}

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
