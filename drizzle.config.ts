import { defineConfig } from "drizzle-kit";

// Migrations are plain SQL generated from src/db/schema.ts and applied at
// start-up by both back-ends (PGlite and PostgreSQL).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema.ts",
  out: "./src/db/migrations",
});
