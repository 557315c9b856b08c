CREATE TABLE "root_role_bindings" (
	"identity_uid" text COLLATE "C" NOT NULL,
	"role_uid" text COLLATE "C" NOT NULL,
	"create_time" timestamp (3) with time zone NOT NULL,
	CONSTRAINT "root_role_bindings_identity_uid_role_uid_pk" PRIMARY KEY("identity_uid","role_uid")
);
--> statement-breakpoint
ALTER TABLE "root_role_bindings" ADD CONSTRAINT "root_role_bindings_identity_uid_identities_uid_fk" FOREIGN KEY ("identity_uid") REFERENCES "public"."identities"("uid") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "root_role_bindings" ADD CONSTRAINT "root_role_bindings_role_uid_roles_uid_fk" FOREIGN KEY ("role_uid") REFERENCES "public"."roles"("uid") ON DELETE no action ON UPDATE no action;