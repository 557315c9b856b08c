import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface BuildInfo {
  name: string;
  version: string;
  /** The Node.js running the server. */
  node: string;
}

/**
 * What `GET /version` shows: the package's name and version, read once from
 * its package.json (the nearest one above this module, which works from
 * src/ under tsx and from dist/ alike).
 */
export function buildInfo(): BuildInfo {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const candidate = join(dir, "package.json");
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, "utf8")) as { name?: string; version?: string };
      return { name: pkg.name ?? "platform-api", version: pkg.version ?? "0.0.0", node: process.version };
    }
    if (dirname(dir) === dir) return { name: "platform-api", version: "0.0.0", node: process.version };
  }
}
