import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { invalidArgument } from "../errors/index.js";

/** Where a page ended: the last row's sort value and uid. */
export interface CursorPosition {
  /** The sort column's value (text, or an ISO timestamp); null when sorting by uid. */
  value: string | null;
  uid: string;
}

export interface PageTokenPayload {
  position: CursorPosition;
  /** Fingerprint of the filter and order the token belongs to. */
  fingerprint: string;
  /** Milliseconds since the epoch when the token was issued. */
  issuedAt: number;
  /** The exact count computed on the first page. */
  totalCount: bigint;
}

interface WirePayload {
  k: string | null;
  u: string;
  f: string;
  t: number;
  n: string;
}

export const PAGE_TOKEN_LIFETIME_MS = 3 * 24 * 60 * 60 * 1000;

/** A short, stable digest of whatever identifies a query (filters and order). */
export function fingerprint(query: unknown): string {
  return createHash("sha256").update(JSON.stringify(query)).digest("base64url").slice(0, 22);
}

/**
 * Page tokens are `base64url(payload).base64url(hmac)`: opaque to callers,
 * and valid on every replica because the HMAC key lives in the database.
 */
export class PageTokenCodec {
  constructor(private readonly key: Buffer) {}

  encode(p: PageTokenPayload): string {
    const wire: WirePayload = {
      k: p.position.value,
      u: p.position.uid,
      f: p.fingerprint,
      t: p.issuedAt,
      n: p.totalCount.toString(),
    };
    const body = Buffer.from(JSON.stringify(wire)).toString("base64url");
    return `${body}.${this.sign(body)}`;
  }

  /** Verifies and decodes; any tampering is INVALID_ARGUMENT on page_token. */
  decode(token: string): PageTokenPayload {
    const bad = () => invalidArgument("page_token", "is not a page token issued by this service for this query");
    const dot = token.indexOf(".");
    if (dot <= 0 || token.length > 4096) throw bad();
    const body = token.slice(0, dot);
    const given = Buffer.from(token.slice(dot + 1), "base64url");
    const expected = Buffer.from(this.sign(body), "base64url");
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw bad();
    let wire: WirePayload;
    try {
      wire = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as WirePayload;
    } catch {
      throw bad();
    }
    if (typeof wire.u !== "string" || typeof wire.f !== "string" || typeof wire.t !== "number" || !/^\d+$/.test(String(wire.n))) {
      throw bad();
    }
    return {
      position: { value: typeof wire.k === "string" ? wire.k : null, uid: wire.u },
      fingerprint: wire.f,
      issuedAt: wire.t,
      totalCount: BigInt(wire.n),
    };
  }

  private sign(body: string): string {
    return createHmac("sha256", this.key).update(body).digest("base64url");
  }
}
