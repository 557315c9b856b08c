import { and, eq, ne } from "drizzle-orm";
import { SecretBox } from "../crypto/index.js";
import type { Database } from "./client.js";
import * as schema from "./schema.js";

/** What a provider's client secret is sealed for: its own row, so a value copied to another provider does not open. */
export const clientSecretContext = (idpUid: string): string => `identity_providers.oidc_client_secret:${idpUid}`;

/** The stored form of identity provider `idpUid`'s client secret; "" (no secret) stays "". */
export function sealClientSecret(box: SecretBox, idpUid: string, secret: string): string {
  if (!idpUid) throw new Error("a client secret is sealed for its provider's uid, and none was given");
  return secret ? box.seal(secret, clientSecretContext(idpUid)) : "";
}

/** The client secret of provider `idpUid` from its stored form (sealed, or plain text from before sealing). */
export function openClientSecret(box: SecretBox, idpUid: string, stored: string): string {
  return stored ? box.open(stored, clientSecretContext(idpUid)) : "";
}

/** Seals every client secret still stored as plain text; idempotent. Returns how many it sealed. */
export async function sealPlaintextClientSecrets(db: Database, box: SecretBox): Promise<number> {
  const t = schema.identityProviders;
  const rows = await db.select({ uid: t.uid, secret: t.oidcClientSecret }).from(t).where(ne(t.oidcClientSecret, ""));
  let sealed = 0;
  for (const row of rows) {
    if (SecretBox.isSealed(row.secret)) continue;
    // Compare-and-set: an update through the API (or another replica) since the read wins.
    const updated = await db
      .update(t)
      .set({ oidcClientSecret: sealClientSecret(box, row.uid, row.secret) })
      .where(and(eq(t.uid, row.uid), eq(t.oidcClientSecret, row.secret)))
      .returning({ uid: t.uid });
    sealed += updated.length;
  }
  return sealed;
}
