import { Command, Option } from "commander";
import { registerAdvisories } from "./commands/advisories.js";
import { registerAuth } from "./commands/auth.js";
import { registerIam } from "./commands/iam.js";
import { registerRegistry } from "./commands/registry.js";
import { buildInfo } from "../server/build-info.js";

// Kept apart from main.ts, which runs it: tests can build and walk the commands without running one.

// From package.json wherever this runs from (src/ through tsx, or dist/).
const { version } = buildInfo();

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
