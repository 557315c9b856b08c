import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from "node:crypto";

/** AES-256 keys: the master key is 32 bytes. */
export const SECRET_BOX_KEY_BYTES = 32;
const PREFIX = "v1:";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** A sealed value that does not open: another master key, or a value altered or moved from another row. */
export class SecretBoxError extends Error {}

/**
 * Seals secrets for storage (signing keys, settings keys, IdP client
 * secrets) with AES-256-GCM under the master key. A sealed value reads
 * `v1:` + base64url(iv | ciphertext | tag); its associated data is the
 * `context` naming what the value is (e.g. `settings:list.page_token_key`,
 * `identity_providers.oidc_client_secret:<uid>`), so a value copied to
 * another row or setting does not open there.
 *
 * Values without the prefix predate encryption at rest: `open` returns them
 * as they are, so existing data keeps working until its owner re-seals it.
 */
export class SecretBox {
  // A private field and a KeyObject: the key never shows up when the box is logged or inspected.
  readonly #key: KeyObject;

  constructor(key: Uint8Array) {
    if (key.length !== SECRET_BOX_KEY_BYTES) throw new RangeError(`a secret box key is ${SECRET_BOX_KEY_BYTES} bytes, not ${key.length}`);
    this.#key = createSecretKey(Buffer.from(key));
  }

  /** Whether `stored` is a sealed value (otherwise it is legacy plain text). */
  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv).setAAD(associatedData(context));
    const body = Buffer.concat([iv, cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return PREFIX + body.toString("base64url");
  }

  /** The plaintext of a value sealed for `context`; legacy plain text as it is. Throws SecretBoxError when it does not open. */
  open(stored: string, context: string): string {
    const aad = associatedData(context);
    if (!SecretBox.isSealed(stored)) return stored;
    const encoded = stored.slice(PREFIX.length);
    const body = BASE64URL.test(encoded) ? Buffer.from(encoded, "base64url") : Buffer.alloc(0);
    if (body.length < IV_BYTES + TAG_BYTES) throw new SecretBoxError(`the sealed ${context} is malformed`);
    try {
      const decipher = createDecipheriv("aes-256-gcm", this.#key, body.subarray(0, IV_BYTES)).setAAD(aad);
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      return Buffer.concat([decipher.update(body.subarray(IV_BYTES, body.length - TAG_BYTES)), decipher.final()]).toString("utf8");
    } catch (e) {
      throw new SecretBoxError(
        `the sealed ${context} does not open: the master key differs from the one that sealed it, or the value was altered or copied from elsewhere`,
        { cause: e },
      );
    }
  }
}

function associatedData(context: string): Buffer {
  // Without a context a value could be moved anywhere; every caller must say what it seals.
  if (!context) throw new RangeError("a sealed value needs a context naming what it is");
  return Buffer.from(context, "utf8");
}
