-- A new role is bound to nobody, so inserting one cannot change anyone's grants: only an update
-- (its capabilities) or a delete does. The trigger of 0004 fired on INSERT too, and every custom
-- role created cleared every replica's grants cache. An upsert that rewrites a built-in role
-- (INSERT … ON CONFLICT DO UPDATE) still fires the UPDATE statement trigger.
DROP TRIGGER roles_grants_changed ON "roles";
--> statement-breakpoint
CREATE TRIGGER roles_grants_changed AFTER UPDATE OR DELETE OR TRUNCATE ON "roles"
  FOR EACH STATEMENT EXECUTE FUNCTION platform_notify_grants_changed();
