import { jsonb, pgTable, text } from "drizzle-orm/pg-core";
import { timestampMs } from "../columns.js";

/** Server-wide secrets and settings shared by every replica (e.g. the page-token HMAC key). */
export const settings = pgTable("settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/** ES256 keys that sign API tokens; public halves are published at /.well-known/jwks.json. */
export const signingKeys = pgTable("signing_keys", {
  kid: text("kid").primaryKey(),
  privateJwk: jsonb("private_jwk").notNull(),
  publicJwk: jsonb("public_jwk").notNull(),
  createTime: timestampMs("create_time").notNull(),
});
