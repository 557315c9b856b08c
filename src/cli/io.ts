import type { Readable, Writable } from "node:stream";

/** Where platformctl writes: a stream, with the terminal's properties when it is one (tty.WriteStream). */
export type CliOutput = Writable & { isTTY?: boolean; columns?: number; hasColors?: () => boolean };

/**
 * Everything platformctl takes from its process, given to it instead of read
 * from `process`, so it can also run inside another program (test/e2e/cli.spec.ts
 * runs most commands in-process); src/cli/main.ts gives it the process's own.
 */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdin: Readable;
  stdout: CliOutput;
  stderr: CliOutput;
}

/** The real process's environment and standard streams. */
export function processIo(): CliIo {
  return { env: process.env, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
}

/** As commander decides it (its `useColor`), from the given environment instead of process.env. */
export function colorsForced(env: NodeJS.ProcessEnv): boolean | undefined {
  if (env["NO_COLOR"] || env["FORCE_COLOR"] === "0" || env["FORCE_COLOR"] === "false") return false;
  if (env["FORCE_COLOR"] || env["CLICOLOR_FORCE"] !== undefined) return true;
  return undefined;
}
