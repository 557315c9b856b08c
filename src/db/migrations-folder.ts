import { fileURLToPath } from "node:url";

/** Drizzle's migrations: copied beside the compiled modules by the build (dist/src/db/migrations). */
export const MIGRATIONS_FOLDER = fileURLToPath(new URL("./migrations", import.meta.url));
