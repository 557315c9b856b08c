import { chmod, mkdir, readFile, realpath, rename, stat, writeFile } from "node:fs/promises";
import type { Stats } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { CliError, EXIT } from "./errors.js";

/**
 * The helper name docker config files give for the platform's registries: docker, podman and
 * skopeo run `docker-credential-<name>` from PATH (package.json "bin": docker-credential-platform).
 */
export const CREDENTIAL_HELPER = "platform";

/** A docker config.json is a few KB; anything this big is not one. */
export const MAX_DOCKER_CONFIG_BYTES = 4 * 1024 * 1024;

/** Where docker reads its configuration: $DOCKER_CONFIG/config.json, else ~/.docker/config.json. */
export function dockerConfigPath(env: NodeJS.ProcessEnv): string {
  return env["DOCKER_CONFIG"] ? join(env["DOCKER_CONFIG"], "config.json") : join(homedir(), ".docker", "config.json");
}

export interface CredHelperResult {
  /** The file written (a symbolic link's target). */
  file: string;
  created: boolean;
  /** The helper the host was given before, when it had one. */
  previous?: string;
  /** False when the file already said so and was left as it was. */
  changed: boolean;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

async function readConfig(file: string): Promise<{ config: Record<string, unknown>; mode?: number }> {
  let info: Stats;
  try {
    info = await stat(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { config: {} };
    throw new CliError(`cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, EXIT.unexpected);
  }
  if (!info.isFile()) throw new CliError(`${file} is not a file`, EXIT.usage);
  if (info.size > MAX_DOCKER_CONFIG_BYTES)
    throw new CliError(`${file} is larger than ${MAX_DOCKER_CONFIG_BYTES} bytes: not a docker config file; left as it is`, EXIT.conflict);
  const text = await readFile(file, "utf8");
  // docker itself takes an empty file for an empty configuration.
  if (!text.trim()) return { config: {}, mode: info.mode & 0o777 };
  let config: unknown;
  try {
    config = JSON.parse(text);
  } catch (e) {
    throw new CliError(
      `${file} is not valid JSON (${(e as Error).message}): fix it, or choose another file with --config; left as it is`,
      EXIT.conflict,
    );
  }
  if (!isObject(config))
    throw new CliError(`${file} does not hold a JSON object: fix it, or choose another file with --config; left as it is`, EXIT.conflict);
  return { config, mode: info.mode & 0o777 };
}

/**
 * Sets `credHelpers[host] = helper` in the docker config file at `path`, keeping every other key
 * (and their order), and creating the file (0600, its directory 0700) when there is none. An
 * existing file that is not a JSON object, or whose credHelpers is not one, is refused and left
 * as it is. The file is replaced whole by a rename (readers never see half of it), with its mode.
 */
export async function setCredHelper(path: string, host: string, helper: string = CREDENTIAL_HELPER): Promise<CredHelperResult> {
  if (!path || path.includes("\0")) throw new CliError("--config: not a file path", EXIT.usage);
  // A config file kept as a symbolic link (dotfiles) stays one: its target is what changes.
  const file = await realpath(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return resolve(path);
    throw new CliError(`cannot read ${path}: ${e.code ?? e.message}`, EXIT.unexpected);
  });
  const { config, mode } = await readConfig(file);
  const helpers = config["credHelpers"] ?? {};
  if (!isObject(helpers)) throw new CliError(`${file}: "credHelpers" is not a JSON object: fix it; left as it is`, EXIT.conflict);
  const previous = typeof helpers[host] === "string" ? helpers[host] : undefined;
  const created = mode === undefined;
  if (previous === helper && !created) return { file, created, previous, changed: false };
  const updated = { ...config, credHelpers: { ...helpers, [host]: helper } };
  const dir = dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  // Tab-indented, as docker writes it.
  await writeFile(tmp, `${JSON.stringify(updated, null, "\t")}\n`, { mode: 0o600 });
  await chmod(tmp, mode ?? 0o600);
  await rename(tmp, file);
  return { file, created, ...(previous === undefined ? {} : { previous }), changed: true };
}
