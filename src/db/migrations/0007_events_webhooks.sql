CREATE TABLE "event_deliveries" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"subscription_uid" text COLLATE "C" NOT NULL,
	"event_uid" text COLLATE "C" NOT NULL,
	"event_seq" bigint NOT NULL,
	"subject" text COLLATE "C" NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_time" timestamp (3) with time zone NOT NULL,
	"lease_until" timestamp (3) with time zone,
	"deadline" timestamp (3) with time zone NOT NULL,
	"last_error" text DEFAULT '' NOT NULL,
	"deliver_time" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "events" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"seq" bigserial NOT NULL,
	"type" text COLLATE "C" NOT NULL,
	"source" text NOT NULL,
	"subject" text COLLATE "C" NOT NULL,
	"actor" text COLLATE "C" DEFAULT '' NOT NULL,
	"parent_uid" text COLLATE "C",
	"time" timestamp (3) with time zone NOT NULL,
	"data" jsonb NOT NULL,
	CONSTRAINT "events_seq_unique" UNIQUE("seq")
);
--> statement-breakpoint
CREATE TABLE "subscriptions" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"sink" text NOT NULL,
	"types" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"secret" text NOT NULL,
	"last_error" text DEFAULT '' NOT NULL,
	"last_error_time" timestamp (3) with time zone,
	"last_delivery_time" timestamp (3) with time zone,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "event_deliveries" ADD CONSTRAINT "event_deliveries_subscription_uid_subscriptions_uid_fk" FOREIGN KEY ("subscription_uid") REFERENCES "public"."subscriptions"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscriptions" ADD CONSTRAINT "subscriptions_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "event_deliveries_due_idx" ON "event_deliveries" USING btree ("next_attempt_time") WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX "event_deliveries_order_idx" ON "event_deliveries" USING btree ("subscription_uid","subject","event_seq") WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX "event_deliveries_subscription_idx" ON "event_deliveries" USING btree ("subscription_uid","state");--> statement-breakpoint
CREATE INDEX "event_deliveries_event_idx" ON "event_deliveries" USING btree ("event_uid");--> statement-breakpoint
CREATE INDEX "events_parent_uid_idx" ON "events" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "events_time_idx" ON "events" USING btree ("time","uid");--> statement-breakpoint
CREATE INDEX "events_type_idx" ON "events" USING btree ("type","uid");--> statement-breakpoint
CREATE INDEX "events_subject_idx" ON "events" USING btree ("subject","uid");--> statement-breakpoint
CREATE INDEX "events_actor_idx" ON "events" USING btree ("actor","uid");--> statement-breakpoint
CREATE INDEX "subscriptions_parent_uid_idx" ON "subscriptions" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "subscriptions_create_time_idx" ON "subscriptions" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "subscriptions_update_time_idx" ON "subscriptions" USING btree ("update_time","uid");