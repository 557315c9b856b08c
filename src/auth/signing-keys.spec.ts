import { describe, expect, it } from "vitest";
import { migratedStorePerFile } from "../../test/support/fresh-store.js";
import { SecretBox } from "../crypto/index.js";
import type { DatabaseHandle } from "../db/index.js";
import { SigningKeys } from "./signing-keys.js";

// Signing keys shared through the database (docs/design.md, "Tokens and access").

let handle: DatabaseHandle;
migratedStorePerFile((h) => (handle = h));
const secrets = new SecretBox(Buffer.alloc(32, 3));
const clock = () => new Date();

describe("SigningKeys", () => {
  it("gives a replica's first concurrent verifications the key another replica made, not a refusal", async () => {
    const signer = new SigningKeys(handle.db, secrets, clock);
    const { kid } = await signer.current();
    // A replica that has not loaded any key yet: every one of these arrives before its first reload ends.
    const cold = new SigningKeys(handle.db, secrets, clock);
    const found = await Promise.all(Array.from({ length: 8 }, () => cold.verificationKey(kid)));
    expect(found.every((k) => k !== undefined)).toBe(true);
  });
});
