// The tables of the resources that came first, as one namespace for the code
// that uses several. drizzle-kit reads tables/ itself (drizzle.config.ts), so a
// new resource's table needs no line here.
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
export * from "./tables/subscriptions.js";
export * from "./tables/events.js";
