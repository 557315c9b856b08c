DROP INDEX IF EXISTS "event_deliveries_order_idx";--> statement-breakpoint
DROP INDEX IF EXISTS "event_deliveries_subscription_idx";--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "event_deliveries_subscription_state_idx" ON "event_deliveries" USING btree ("subscription_uid","state","subject","event_seq");
