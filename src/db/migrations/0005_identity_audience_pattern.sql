ALTER TABLE "identities" ADD COLUMN "claim_audience_pattern" text DEFAULT '' NOT NULL;--> statement-breakpoint
-- A deleted identity's tokens must stop working on every replica at once:
-- its deletion clears the grants caches like a binding change does (the
-- cache also records whether the identity exists).
CREATE TRIGGER identities_grants_changed AFTER DELETE OR TRUNCATE ON "identities"
  FOR EACH STATEMENT EXECUTE FUNCTION platform_notify_grants_changed();
