-- Intentionally empty. This migration used to insert the built-in roles; they are now written
-- from BUILT_IN_ROLES (src/authz/capabilities.ts) every time the database is opened
-- (src/db/built-in-roles.ts; docs/design.md, "Built-in roles"), so the catalogue is the one
-- source of truth. Editing it is safe: drizzle's migrator decides what to run by the journal's
-- `when` of the last applied migration and never compares the stored hash.
SELECT 1;
