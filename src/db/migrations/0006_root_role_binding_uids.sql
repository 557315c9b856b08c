-- Root bindings become an API resource and need a uid (16 hex, like a
-- root-level identity's). Rows written before have none: each gets a random
-- one (md5 of fresh randomness: hex, available on PostgreSQL and PGlite alike).
ALTER TABLE "root_role_bindings" ADD COLUMN "uid" text COLLATE "C";--> statement-breakpoint
UPDATE "root_role_bindings" SET "uid" = substr(md5(random()::text || clock_timestamp()::text || "identity_uid" || "role_uid"), 1, 16);--> statement-breakpoint
ALTER TABLE "root_role_bindings" ALTER COLUMN "uid" SET NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "root_role_bindings_uid_key" ON "root_role_bindings" USING btree ("uid");--> statement-breakpoint
CREATE INDEX "root_role_bindings_role_uid_idx" ON "root_role_bindings" USING btree ("role_uid","uid");--> statement-breakpoint
CREATE INDEX "root_role_bindings_create_time_idx" ON "root_role_bindings" USING btree ("create_time","uid");
