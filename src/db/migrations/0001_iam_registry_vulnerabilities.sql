CREATE TABLE "roles" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C",
	"path" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"capabilities" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "role_bindings" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"identity_uid" text COLLATE "C" NOT NULL,
	"role_uid" text COLLATE "C" NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "repos" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"aliases" text[] DEFAULT '{}' NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tags" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"digest" text COLLATE "C" NOT NULL,
	"deprecated" boolean DEFAULT false NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "advisories" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"advisory_id" text COLLATE "C" NOT NULL,
	"aliases" text[] DEFAULT '{}' NOT NULL,
	"artifact_name" text COLLATE "C" DEFAULT '' NOT NULL,
	"artifact_type" text DEFAULT '' NOT NULL,
	"component_name" text COLLATE "C" DEFAULT '' NOT NULL,
	"component_type" text DEFAULT '' NOT NULL,
	"severities" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"events" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"summary" text DEFAULT '' NOT NULL,
	"details" text DEFAULT '' NOT NULL,
	"published" text COLLATE "C",
	"modified" text COLLATE "C" NOT NULL,
	"withdrawn" text COLLATE "C",
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "identity_providers" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"default_role_uid" text COLLATE "C",
	"oidc_issuer" text NOT NULL,
	"oidc_client_id" text NOT NULL,
	"oidc_client_secret" text DEFAULT '' NOT NULL,
	"oidc_additional_scopes" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "account_associations" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"path" text COLLATE "C" NOT NULL,
	"name" text COLLATE "C" DEFAULT '' NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"amazon" jsonb,
	"google" jsonb,
	"azure" jsonb,
	"github" jsonb,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "account_associations_uid_is_group" CHECK ("account_associations"."uid" = "account_associations"."parent_uid")
);
--> statement-breakpoint
CREATE TABLE "group_invites" (
	"uid" text COLLATE "C" PRIMARY KEY NOT NULL,
	"parent_uid" text COLLATE "C" NOT NULL,
	"role_uid" text COLLATE "C" NOT NULL,
	"email" text DEFAULT '' NOT NULL,
	"single_use" boolean DEFAULT false NOT NULL,
	"code_hash" text NOT NULL,
	"expiration_time" timestamp (3) with time zone NOT NULL,
	"redeem_time" timestamp (3) with time zone,
	"create_time" timestamp (3) with time zone NOT NULL,
	"update_time" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "roles" ADD CONSTRAINT "roles_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_identity_uid_identities_uid_fk" FOREIGN KEY ("identity_uid") REFERENCES "public"."identities"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "role_bindings" ADD CONSTRAINT "role_bindings_role_uid_roles_uid_fk" FOREIGN KEY ("role_uid") REFERENCES "public"."roles"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "repos" ADD CONSTRAINT "repos_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tags" ADD CONSTRAINT "tags_parent_uid_repos_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."repos"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_providers" ADD CONSTRAINT "identity_providers_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "identity_providers" ADD CONSTRAINT "identity_providers_default_role_uid_roles_uid_fk" FOREIGN KEY ("default_role_uid") REFERENCES "public"."roles"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "account_associations" ADD CONSTRAINT "account_associations_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_invites" ADD CONSTRAINT "group_invites_parent_uid_groups_uid_fk" FOREIGN KEY ("parent_uid") REFERENCES "public"."groups"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "group_invites" ADD CONSTRAINT "group_invites_role_uid_roles_uid_fk" FOREIGN KEY ("role_uid") REFERENCES "public"."roles"("uid") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "roles_parent_uid_idx" ON "roles" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "roles_path_idx" ON "roles" USING btree ("path");--> statement-breakpoint
CREATE INDEX "roles_name_idx" ON "roles" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "roles_create_time_idx" ON "roles" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "roles_update_time_idx" ON "roles" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "roles_parent_name_key" ON "roles" USING btree ("parent_uid","name") WHERE "roles"."parent_uid" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "roles_builtin_name_key" ON "roles" USING btree ("name") WHERE "roles"."parent_uid" IS NULL;--> statement-breakpoint
CREATE INDEX "role_bindings_parent_uid_idx" ON "role_bindings" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "role_bindings_identity_uid_idx" ON "role_bindings" USING btree ("identity_uid","uid");--> statement-breakpoint
CREATE INDEX "role_bindings_role_uid_idx" ON "role_bindings" USING btree ("role_uid","uid");--> statement-breakpoint
CREATE INDEX "role_bindings_create_time_idx" ON "role_bindings" USING btree ("create_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "role_bindings_parent_identity_role_key" ON "role_bindings" USING btree ("parent_uid","identity_uid","role_uid");--> statement-breakpoint
CREATE INDEX "repos_parent_uid_idx" ON "repos" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "repos_name_idx" ON "repos" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "repos_create_time_idx" ON "repos" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "repos_update_time_idx" ON "repos" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "repos_parent_name_key" ON "repos" USING btree ("parent_uid","name");--> statement-breakpoint
CREATE INDEX "tags_parent_uid_idx" ON "tags" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "tags_name_idx" ON "tags" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "tags_digest_idx" ON "tags" USING btree ("digest","uid");--> statement-breakpoint
CREATE INDEX "tags_create_time_idx" ON "tags" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "tags_update_time_idx" ON "tags" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "tags_parent_name_key" ON "tags" USING btree ("parent_uid","name");--> statement-breakpoint
CREATE INDEX "advisories_advisory_id_idx" ON "advisories" USING btree ("advisory_id","uid");--> statement-breakpoint
CREATE INDEX "advisories_aliases_idx" ON "advisories" USING gin ("aliases");--> statement-breakpoint
CREATE INDEX "advisories_artifact_name_idx" ON "advisories" USING btree ("artifact_name","uid");--> statement-breakpoint
CREATE INDEX "advisories_component_name_idx" ON "advisories" USING btree ("component_name","uid");--> statement-breakpoint
CREATE INDEX "advisories_create_time_idx" ON "advisories" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "advisories_update_time_idx" ON "advisories" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_parent_uid_idx" ON "identity_providers" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_name_idx" ON "identity_providers" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_create_time_idx" ON "identity_providers" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_update_time_idx" ON "identity_providers" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "identity_providers_default_role_uid_idx" ON "identity_providers" USING btree ("default_role_uid");--> statement-breakpoint
CREATE UNIQUE INDEX "identity_providers_parent_name_key" ON "identity_providers" USING btree ("parent_uid","name");--> statement-breakpoint
CREATE INDEX "account_associations_parent_uid_idx" ON "account_associations" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "account_associations_path_idx" ON "account_associations" USING btree ("path");--> statement-breakpoint
CREATE INDEX "account_associations_name_idx" ON "account_associations" USING btree ("name","uid");--> statement-breakpoint
CREATE INDEX "account_associations_create_time_idx" ON "account_associations" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "account_associations_update_time_idx" ON "account_associations" USING btree ("update_time","uid");--> statement-breakpoint
CREATE INDEX "group_invites_parent_uid_idx" ON "group_invites" USING btree ("parent_uid","uid");--> statement-breakpoint
CREATE INDEX "group_invites_role_uid_idx" ON "group_invites" USING btree ("role_uid");--> statement-breakpoint
CREATE INDEX "group_invites_create_time_idx" ON "group_invites" USING btree ("create_time","uid");--> statement-breakpoint
CREATE INDEX "group_invites_update_time_idx" ON "group_invites" USING btree ("update_time","uid");--> statement-breakpoint
CREATE UNIQUE INDEX "group_invites_code_hash_key" ON "group_invites" USING btree ("code_hash");--> statement-breakpoint
CREATE INDEX "identities_claim_idx" ON "identities" USING btree ("claim_issuer","claim_subject","uid");