// The tables, as one namespace (`schema.groups`) for the code that uses several, also handed to
// drizzle's client (client.ts). No list needs to be complete: drizzle-kit (drizzle.config.ts) and
// the group-contents test (src/services/resource.spec.ts) read every file under tables/, so a new
// table needs a line here only once some code reads it as `schema.<table>`.
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
