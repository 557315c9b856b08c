import { withoutTrailingSlash } from "../../http/index.js";
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { SecretBox } from "../../crypto/index.js";
import { loadSealedSetting, type Database } from "../../db/index.js";

/** How long a person has to finish signing in. */
export const LOGIN_TTL_MS = 10 * 60 * 1000;
const KEY_SETTING = "login.state_key";
const COOKIE_PREFIX = "platform_login_";
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A login between the CLI's request and its callback. */
export interface PendingLogin {
  /** Our `state` at the upstream; it also names the cookie, so parallel logins do not collide. */
  state: string;
  /** The CLI's loopback callback URL (already checked). */
  callback: string;
  cliState: string;
  /** The invite code to redeem, or "". */
  invite: string;
  /** The uid of the organization's identity provider to sign in with, or "" for the global upstream. */
  idp: string;
  nonce: string;
  /** The PKCE code verifier. */
  verifier: string;
  /** Echoed by the development sign-in form (the cookie alone is not proof of intent). */
  csrf: string;
  /** Epoch milliseconds, by the server's clock. */
  expiresAt: number;
}

export type NewLogin = Pick<PendingLogin, "callback" | "cliState" | "invite" | "idp">;

const random = () => randomBytes(32).toString("base64url");

function cookieValue(header: string | string[] | undefined, name: string): string | undefined {
  const all = Array.isArray(header) ? header.join("; ") : (header ?? "");
  for (const part of all.split(";")) {
    const at = part.indexOf("=");
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Pending logins live in the browser, in an HttpOnly cookie encrypted and
 * authenticated (AES-256-GCM) with a key kept in the database: nothing to
 * store per login, any replica can finish a login another one started, and
 * the cookie binds the login to the browser that started it.
 */
export class LoginStates {
  private key: Promise<Buffer> | undefined;

  constructor(
    private readonly db: Database,
    /** Seals the cookie key at rest in the database. */
    private readonly secrets: SecretBox,
    private readonly clock: () => Date,
    /** The auth URL: the cookie's path and whether it is Secure follow from it. */
    private readonly authUrl: string,
  ) {}

  async create(login: NewLogin): Promise<{ pending: PendingLogin; setCookie: string }> {
    const pending: PendingLogin = {
      ...login,
      state: random(),
      nonce: random(),
      verifier: random(),
      csrf: random(),
      expiresAt: this.clock().getTime() + LOGIN_TTL_MS,
    };
    const name = COOKIE_PREFIX + pending.state;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", await this.loadKey(), iv).setAAD(Buffer.from(name));
    const sealed = Buffer.concat([iv, cipher.update(JSON.stringify(pending), "utf8"), cipher.final(), cipher.getAuthTag()]);
    return { pending, setCookie: this.cookie(name, sealed.toString("base64url"), LOGIN_TTL_MS / 1000) };
  }

  /** The pending login `state` names, from the request's cookies; undefined when absent or not ours. */
  async read(cookieHeader: string | string[] | undefined, state: string): Promise<PendingLogin | undefined> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(state)) return undefined;
    const name = COOKIE_PREFIX + state;
    const sealed = Buffer.from(cookieValue(cookieHeader, name) ?? "", "base64url");
    if (sealed.length <= IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv("aes-256-gcm", await this.loadKey(), sealed.subarray(0, IV_BYTES)).setAAD(Buffer.from(name));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plain = Buffer.concat([decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)), decipher.final()]);
      const pending = JSON.parse(plain.toString("utf8")) as PendingLogin;
      return pending.state === state ? pending : undefined;
    } catch {
      return undefined;
    }
  }

  expired(pending: PendingLogin): boolean {
    return this.clock().getTime() >= pending.expiresAt;
  }

  /** The Set-Cookie that ends a pending login (finished or failed). */
  clear(pending: PendingLogin): string {
    return this.cookie(COOKIE_PREFIX + pending.state, "", 0);
  }

  private cookie(name: string, value: string, maxAgeSeconds: number): string {
    const url = new URL(this.authUrl);
    const path = `${withoutTrailingSlash(url.pathname)}/oauth`;
    const secure = url.protocol === "https:" ? "; Secure" : "";
    // Lax: the upstream's redirect back is a top-level GET from another site.
    return `${name}=${value}; Path=${path}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure}`;
  }

  private loadKey(): Promise<Buffer> {
    this.key ??= (async () => {
      const key = await loadSealedSetting(this.db, this.secrets, KEY_SETTING, () => randomBytes(32).toString("base64"));
      return Buffer.from(key, "base64");
    })();
    // A failed load (database down) is retried by the next login.
    this.key.catch(() => (this.key = undefined));
    return this.key;
  }
}
