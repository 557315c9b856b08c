-- Every change to what grants capabilities (role bindings, root bindings,
-- roles) notifies `platform_grants_changed`, so each replica's cache of
-- callers' grants is cleared the moment the change commits.
CREATE FUNCTION platform_notify_grants_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('platform_grants_changed', '');
  RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER role_bindings_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "role_bindings"
  FOR EACH STATEMENT EXECUTE FUNCTION platform_notify_grants_changed();
--> statement-breakpoint
CREATE TRIGGER root_role_bindings_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "root_role_bindings"
  FOR EACH STATEMENT EXECUTE FUNCTION platform_notify_grants_changed();
--> statement-breakpoint
CREATE TRIGGER roles_grants_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "roles"
  FOR EACH STATEMENT EXECUTE FUNCTION platform_notify_grants_changed();
