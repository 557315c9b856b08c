ALTER TABLE "subscriptions" ADD COLUMN "state" text DEFAULT 'active' NOT NULL;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD COLUMN "creator_uid" text COLLATE "C";--> statement-breakpoint
CREATE INDEX "subscriptions_creator_uid_idx" ON "subscriptions" USING btree ("creator_uid");--> statement-breakpoint
-- Subscriptions made before creators were recorded: their creator is the actor of their latest
-- create or update event, where the events table still holds one. The others are stopped, their
-- pending deliveries failed, until someone who may list events there updates them: nobody can be
-- checked for them, so they could be sending for someone long gone (docs/design.md, "Webhooks").
UPDATE "subscriptions" s SET "creator_uid" = (
  SELECT e."actor" FROM "events" e
  WHERE e."subject" = s."uid" AND e."actor" <> ''
    AND e."type" IN ('platform.events.subscription.created.v1', 'platform.events.subscription.updated.v1')
  ORDER BY e."seq" DESC LIMIT 1
);--> statement-breakpoint
UPDATE "subscriptions" SET "state" = 'stopped',
  "last_error" = 'stopped: made before subscriptions recorded whom they send for, and no stored event names its creator; an update by someone who may list its events starts it again',
  "last_error_time" = now()
WHERE "creator_uid" IS NULL;--> statement-breakpoint
UPDATE "event_deliveries" d SET "state" = 'failed', "lease_until" = NULL, "last_error" = s."last_error"
FROM "subscriptions" s
WHERE d."subscription_uid" = s."uid" AND d."state" = 'pending' AND s."state" = 'stopped';
