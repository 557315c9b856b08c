// Every table, one file per resource under tables/. drizzle-kit reads this
// file to generate migrations (npm run db:generate).
export * from "./tables/system.js";
export * from "./tables/groups.js";
export * from "./tables/identities.js";
