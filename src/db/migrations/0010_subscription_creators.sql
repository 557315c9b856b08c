ALTER TABLE "subscriptions" ADD COLUMN "state" text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "creator_uid" text COLLATE "C";--> statement-breakpoint
CREATE INDEX "subscriptions_creator_uid_idx" ON "subscriptions" USING btree ("creator_uid");--> statement-breakpoint
-- Subscriptions made before creators were recorded: their creator is the actor of their latest
-- create or update event, where the events table still holds one. The others keep a null creator
-- and keep delivering until someone updates them (docs/design.md, "Webhooks").
UPDATE "subscriptions" s SET "creator_uid" = (
  SELECT e."actor" FROM "events" e
  WHERE e."subject" = s."uid" AND e."actor" <> ''
    AND e."type" IN ('platform.events.subscription.created.v1', 'platform.events.subscription.updated.v1')
  ORDER BY e."seq" DESC LIMIT 1
);
