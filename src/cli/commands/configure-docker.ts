import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import type { Command } from "commander";
import { contextOf } from "../context.js";
import { CREDENTIAL_HELPER, dockerConfigPath, setCredHelper } from "../docker-config.js";
import { HELPER_PROGRAM } from "../docker-credential-helper.js";
import { CliError, EXIT } from "../errors.js";
import type { CliIo } from "../io.js";
import { parseRegistryHost } from "../registry-host.js";

interface ConfigureDockerOptions {
  registry?: string;
  config?: string;
}

/** Whether `program` is an executable file in one of PATH's directories. */
export function onPath(program: string, env: NodeJS.ProcessEnv): boolean {
  return (env["PATH"] ?? "").split(delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(join(dir, program), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * `platformctl auth configure-docker`: records that the registry host belongs to the current
 * API, and gives the host to the `platform` credential helper in docker's config file, which
 * podman and skopeo read too. The helper then hands out the current login's API token.
 */
export function registerConfigureDocker(auth: Command, io: CliIo): void {
  auth
    .command("configure-docker")
    .description(
      `let docker, podman and skopeo log in to the platform's registry with this login: records the registry for the API ` +
        `and sets "credHelpers" for it in docker's config file, so they run ${HELPER_PROGRAM} (installed with platformctl)`,
    )
    .option(
      "--registry <host:port>",
      "the registry's address as image names write it, e.g. localhost:5000 (default: the one recorded for the API)",
    )
    .option("--config <file>", "the docker config file (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json)")
    .action(async (opts: ConfigureDockerOptions, cmd: Command) => {
      const ctx = await contextOf(cmd, io);
      let host: string;
      if (opts.registry !== undefined) host = parseRegistryHost(opts.registry, "--registry");
      else {
        const recorded = Object.entries(await ctx.store.registries())
          .filter(([, api]) => api === ctx.api)
          .map(([h]) => h);
        if (recorded.length !== 1) {
          const known = recorded.length ? ` (${ctx.api} has ${recorded.join(", ")})` : "";
          throw new CliError(`--registry <host:port> is needed: the registry's address, e.g. localhost:5000${known}`, EXIT.usage);
        }
        host = recorded[0]!;
      }
      // The docker file first: when it is refused, nothing is recorded either.
      const result = await setCredHelper(opts.config ?? dockerConfigPath(ctx.env), host, CREDENTIAL_HELPER);
      const before = await ctx.store.setRegistry(host, ctx.api);

      ctx.print(`registry ${host} uses the login to ${ctx.api}${before ? ` (it used ${before}'s before)` : ""}`);
      const action = result.created
        ? "created with"
        : !result.changed
          ? "already has"
          : result.previous
            ? `now has (was "${result.previous}")`
            : "now has";
      ctx.print(`${result.file} ${action} "credHelpers": {"${host}": "${CREDENTIAL_HELPER}"}`);
      ctx.print(
        `docker reads it from there (docker pull|push ${host}/<group>/<repo>); podman and skopeo read it with ` +
          `--authfile ${result.file} or REGISTRY_AUTH_FILE=${result.file}, and run ${HELPER_PROGRAM} too`,
      );
      if (!onPath(HELPER_PROGRAM, ctx.env)) {
        ctx.note(
          `note: ${HELPER_PROGRAM} is not on PATH: docker, podman and skopeo run it from there (npm install -g, or npm link, puts it next to platformctl)`,
        );
      }
      if (!ctx.env["PLATFORM_TOKEN"] && !(await ctx.store.token(ctx.api))) {
        ctx.note(`note: not logged in to ${ctx.api} yet: run platformctl auth login`);
      }
    });
}
