import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { CliError, EXIT } from "./errors.js";
import { registryHostProblem } from "./registry-host.js";

/** Where a workload's OIDC token comes from, so `auth token` can exchange it again. */
export type IdentityTokenSource = { file: string } | { literal: string };

/** One API endpoint's credentials in tokens.json. */
export interface TokenEntry {
  token: string;
  /** RFC 3339. */
  expiry: string;
  kind: "browser" | "workload";
  /** Workloads: the identity uid, its OIDC token source and the audience asked for. */
  identity?: string;
  identityToken?: IdentityTokenSource;
  audience?: string;
}

interface ConfigFile {
  /** The API URL used when neither --api nor PLATFORM_API is given. */
  current?: string;
  /**
   * Registry host (`host[:port]`, lower case) → the API URL whose login the docker credential
   * helper hands out for it (`platformctl auth configure-docker`).
   */
  registries?: Record<string, string>;
}

type TokensFile = Record<string, TokenEntry>;

/** $PLATFORM_CONFIG_DIR, else ${XDG_CONFIG_HOME:-~/.config}/platformctl. */
export function configDir(env: NodeJS.ProcessEnv): string {
  if (env["PLATFORM_CONFIG_DIR"]) return env["PLATFORM_CONFIG_DIR"];
  return join(env["XDG_CONFIG_HOME"] || join(homedir(), ".config"), "platformctl");
}

/**
 * config.json (the current API) and tokens.json (credentials per API URL) in
 * the user's config directory: the directory 0700, the files 0600, each
 * written whole to a temporary file and renamed so readers never see half.
 */
export class ConfigStore {
  constructor(readonly dir: string) {}

  get tokensFile(): string {
    return join(this.dir, "tokens.json");
  }

  get configFile(): string {
    return join(this.dir, "config.json");
  }

  async current(): Promise<string | undefined> {
    return (await this.read<ConfigFile>(this.configFile)).current || undefined;
  }

  async setCurrent(api: string): Promise<void> {
    const config = await this.read<ConfigFile>(this.configFile);
    if (config.current === api) return;
    await this.write(this.configFile, { ...config, current: api });
  }

  /**
   * The registries recorded by configure-docker: host → API URL. Entries of a hand-edited file
   * that are not a valid host and a string are left out (a "__proto__" key among them).
   */
  async registries(): Promise<Record<string, string>> {
    const recorded = (await this.read<ConfigFile>(this.configFile)).registries;
    if (typeof recorded !== "object" || recorded === null || Array.isArray(recorded)) return {};
    return Object.fromEntries(
      Object.entries(recorded).filter((e): e is [string, string] => typeof e[1] === "string" && registryHostProblem(e[0]) === undefined),
    );
  }

  /** The API URL recorded for registry `host`, if any. */
  async registryApi(host: string): Promise<string | undefined> {
    const registries = await this.registries();
    return Object.hasOwn(registries, host) ? registries[host] : undefined;
  }

  /** Records that registry `host` belongs to `api`; answers the API it belonged to before, if another. */
  async setRegistry(host: string, api: string): Promise<string | undefined> {
    const config = await this.read<ConfigFile>(this.configFile);
    const registries = await this.registries();
    const before = Object.hasOwn(registries, host) ? registries[host] : undefined;
    if (before === api) return undefined;
    await this.write(this.configFile, { ...config, registries: { ...registries, [host]: api } });
    return before;
  }

  async token(api: string): Promise<TokenEntry | undefined> {
    return (await this.read<TokensFile>(this.tokensFile))[api];
  }

  async saveToken(api: string, entry: TokenEntry): Promise<void> {
    const tokens = await this.read<TokensFile>(this.tokensFile);
    await this.write(this.tokensFile, { ...tokens, [api]: entry });
  }

  /** Removes the entry of `api`; false when there was none. */
  async removeToken(api: string): Promise<boolean> {
    const tokens = await this.read<TokensFile>(this.tokensFile);
    if (!(api in tokens)) return false;
    delete tokens[api];
    await this.write(this.tokensFile, tokens);
    return true;
  }

  private async read<T extends object>(file: string): Promise<Partial<T>> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return {};
      throw new CliError(`cannot read ${file}: ${(e as Error).message}`, EXIT.unexpected);
    }
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === "object" && value !== null && !Array.isArray(value)) return value as Partial<T>;
    } catch {
      // reported below
    }
    throw new CliError(`${file} is not a JSON object: fix or delete it`, EXIT.unexpected);
  }

  private async write(file: string, value: object): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
    // An existing file's mode is kept by writeFile; the rename replaces it with the new 0600 one.
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  }
}
