import { defineConfig } from "drizzle-kit";

// Migrations are plain SQL generated from src/db/tables/*.ts and applied at
// start-up by both back-ends (PGlite and PostgreSQL).
export default defineConfig({
  dialect: "postgresql",
  // Every file under tables/ (a new resource's table is picked up without a list to edit).
  schema: "./src/db/tables/*.ts",
  out: "./src/db/migrations",
});
