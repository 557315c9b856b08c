// Every table, one file per resource under tables/. drizzle-kit reads this
// file to generate migrations (npm run db:generate).
export * from "./tables/system.js";
export * from "./tables/groups.js";
export * from "./tables/identities.js";
export * from "./tables/roles.js";
export * from "./tables/role-bindings.js";
export * from "./tables/repos.js";
export * from "./tables/tags.js";
export * from "./tables/advisories.js";
export * from "./tables/identity-providers.js";
export * from "./tables/account-associations.js";
export * from "./tables/group-invites.js";
export * from "./tables/root-role-bindings.js";
