import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// This install's own files: where its package.json is, and what it says. The nearest package.json
// above this module, which is the same one from src/ under tsx and from dist/src/ alike.

let root: string | null | undefined;

/** The root of this checkout or installed package (where its package.json is); undefined if there is none. */
export function packageRoot(): string | undefined {
  if (root === undefined) {
    root = null;
    for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
      if (existsSync(join(dir, "package.json"))) {
        root = dir;
        break;
      }
    }
  }
  return root ?? undefined;
}

export interface BuildInfo {
  name: string;
  version: string;
  /** The Node.js running the server. */
  node: string;
}

/** What `GET /version` and the CLI's `--version` show: the package's name and version, and Node's. */
export function buildInfo(): BuildInfo {
  const dir = packageRoot();
  const pkg = dir ? (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name?: string; version?: string }) : {};
  return { name: pkg.name ?? "platform-api", version: pkg.version ?? "0.0.0", node: process.version };
}
