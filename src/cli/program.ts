import { Command, Option } from "commander";
import { registerAdvisories } from "./commands/advisories.js";
import { registerAuth } from "./commands/auth.js";
import { registerResources } from "./commands/api-resources.js";
import { registerEvents } from "./commands/events.js";
import { buildInfo } from "../package/index.js";
import { colorsForced, processIo, type CliIo } from "./io.js";

// Kept apart from main.ts, which runs it: tests can build and walk the commands without running one.

// From package.json wherever this runs from (src/ through tsx, or dist/).
const { version } = buildInfo();

/**
 * platformctl: the command-line client of the Platform API (docs/cli.md, "Command-line tool").
 * Commands read and write only `io` (the process's own by default: tests walk the help).
 */
export function buildProgram(io: CliIo = processIo()): Command {
  const program = new Command("platformctl")
    .description("command-line client of the Platform API v2")
    .version(version)
    .option("--api <url>", "the API URL (default: $PLATFORM_API, then the last one logged in to, then http://localhost:8080)")
    .addOption(
      new Option("-o, --output <format>", "table (aligned columns) or json (the REST JSON)").choices(["table", "json"]).default("table"),
    )
    // Sub-commands inherit these: usage errors throw instead of exiting, so they get exit code 2.
    .exitOverride()
    .showHelpAfterError("(run with --help for usage)")
    // commander's defaults (80 columns off a terminal), on io's streams and environment instead
    // of the process's; set before the sub-commands are added, which copy it.
    .configureOutput({
      writeOut: (str) => io.stdout.write(str),
      writeErr: (str) => io.stderr.write(str),
      getOutHelpWidth: () => (io.stdout.isTTY ? io.stdout.columns : undefined) ?? 80,
      getErrHelpWidth: () => (io.stderr.isTTY ? io.stderr.columns : undefined) ?? 80,
      getOutHasColors: () => colorsForced(io.env) ?? (io.stdout.isTTY === true && io.stdout.hasColors?.() === true),
      getErrHasColors: () => colorsForced(io.env) ?? (io.stderr.isTTY === true && io.stderr.hasColors?.() === true),
    });
  registerAuth(program, io);
  registerResources(program, io);
  registerAdvisories(program, io);
  registerEvents(program, io);
  return program;
}
