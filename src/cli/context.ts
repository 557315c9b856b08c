import { withoutTrailingSlash } from "../http/url.js";
import type { Command } from "commander";
import { ApiClient } from "./api-client.js";
import { ConfigStore, configDir } from "./config-store.js";
import { currentToken } from "./credentials.js";
import { CliError, EXIT } from "./errors.js";
import type { CliIo } from "./io.js";
import { renderJson, type OutputFormat } from "./output.js";

export const DEFAULT_API = "http://localhost:8080";

interface GlobalOptions {
  api?: string;
  output: OutputFormat;
}

/** An http(s) URL without trailing slashes: the key tokens are stored under. */
export function normalizeApiUrl(raw: string, source: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`${source}: "${raw}" is not a URL`, EXIT.usage);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new CliError(`${source}: "${raw}" is not an http(s) URL`, EXIT.usage);
  return withoutTrailingSlash(raw.trim());
}

/** What every command needs: the API it talks to, the output format and the stored credentials. */
export class CommandContext {
  constructor(
    readonly api: string,
    readonly output: OutputFormat,
    readonly store: ConfigStore,
    /** The environment and streams of this run (the process's, or a test's). */
    readonly io: CliIo,
  ) {}

  get env(): NodeJS.ProcessEnv {
    return this.io.env;
  }

  /** The REST client, authenticated with the current token (renewed when a workload's expired). */
  client(): ApiClient {
    return new ApiClient(this.api, () => currentToken(this.store, this.api, this.env));
  }

  /** A result: stdout. */
  print(text: string): void {
    this.io.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
  }

  printJson(value: unknown): void {
    this.print(renderJson(value));
  }

  /** A hint or progress for the person at the terminal: stderr, never mixed into results. */
  note(text: string): void {
    this.io.stderr.write(text.endsWith("\n") ? text : `${text}\n`);
  }
}

/** --api, else $PLATFORM_API, else config.json's current, else http://localhost:8080. */
export async function contextOf(cmd: Command, io: CliIo): Promise<CommandContext> {
  const { env } = io;
  const opts = cmd.optsWithGlobals<GlobalOptions>();
  const store = new ConfigStore(configDir(env));
  const api = opts.api
    ? normalizeApiUrl(opts.api, "--api")
    : env["PLATFORM_API"]
      ? normalizeApiUrl(env["PLATFORM_API"], "PLATFORM_API")
      : ((await store.current()) ?? DEFAULT_API);
  return new CommandContext(api, opts.output, store, io);
}
