CREATE TABLE "groups" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C",
	"name" text COLLATE "C" NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"resource_limits" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"verified" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identities" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C",
	"name" text COLLATE "C" NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"claim_issuer" text DEFAULT '' NOT NULL,
	"claim_subject" text DEFAULT '' NOT NULL,
	"claim_issuer_pattern" text DEFAULT '' NOT NULL,
	"claim_subject_pattern" text DEFAULT '' NOT NULL,
	"claim_audience" text DEFAULT '' NOT NULL,
	"last_seen_time" timestamp (3) with time zone,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "settings" (
	"key" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "signing_keys" (
	"kid" text PRIMARY KEY NOT NULL,
	"private_jwk" jsonb NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "groups" ADD CONSTRAINT "groups_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identities" ADD CONSTRAINT "identities_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "groups_parent_uid_idx" ON "groups" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "groups_name_idx" ON "groups" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "groups_create_time_idx" ON "groups" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "groups_update_time_idx" ON "groups" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "groups_parent_name_key" ON "groups" USING btree ("parent_uid","name") WHERE "groups"."parent_uid" IS NOT NULL;--> statement-breakpoint
CREATE INDEX "identities_parent_uid_idx" ON "identities" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "identities_name_idx" ON "identities" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "identities_create_time_idx" ON "identities" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "identities_update_time_idx" ON "identities" USING btree ("update_time","uid");