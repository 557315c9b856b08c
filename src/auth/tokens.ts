import { SignJWT, decodeProtectedHeader, jwtVerify } from "jose";
import { unauthenticated } from "../errors/index.js";
import { SIGNING_ALG, type SigningKeys } from "./signing-keys.js";

export const API_TOKEN_TTL_SECONDS = 60 * 60;

export interface MintedToken {
  token: string;
  expiry: Date;
}

export interface VerifiedToken {
  /** The identity uid (`sub`). */
  subject: string;
  audience: string;
  expiry: Date;
}

/** Verified tokens kept so a repeat caller skips the signature check (ES256 verify dominates a cheap GET). */
const VERIFIED_CACHE_SIZE = 10_000;

/** Mints and verifies the service's own API tokens (JWT, ES256). */
export class TokenService {
  private readonly verified = new Map<string, VerifiedToken>();

  constructor(
    private readonly keys: SigningKeys,
    private readonly issuer: string,
    private readonly clock: () => Date,
  ) {}

  async mint(subject: string, audience: string, ttlSeconds = API_TOKEN_TTL_SECONDS): Promise<MintedToken> {
    const key = await this.keys.current();
    const now = Math.floor(this.clock().getTime() / 1000);
    const exp = now + ttlSeconds;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: SIGNING_ALG, kid: key.kid, typ: "JWT" })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setAudience(audience)
      .setIssuedAt(now)
      .setNotBefore(now - 5)
      .setExpirationTime(exp)
      .setJti(crypto.randomUUID())
      .sign(key.sign);
    return { token, expiry: new Date(exp * 1000) };
  }

  /**
   * Verifies signature, issuer, expiry and that `aud` is one of `audiences`.
   * Every failure is the same UNAUTHENTICATED, so the answer is no oracle.
   */
  async verify(token: string, audiences: string[]): Promise<VerifiedToken> {
    const reject = () => unauthenticated("the bearer token is missing, malformed, expired or not meant for this service", true);
    const cached = this.verified.get(token);
    if (cached) {
      if (cached.expiry.getTime() > this.clock().getTime() && audiences.includes(cached.audience)) return cached;
      throw reject();
    }
    const result = await this.verifySignature(token, audiences, reject);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) {
      // Map iteration is insertion order: drop the oldest entry.
      const oldest = this.verified.keys().next();
      if (!oldest.done) this.verified.delete(oldest.value);
    }
    this.verified.set(token, result);
    return result;
  }

  private async verifySignature(token: string, audiences: string[], reject: () => Error): Promise<VerifiedToken> {
    let kid: string | undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== SIGNING_ALG || typeof header.kid !== "string") throw reject();
      kid = header.kid;
    } catch {
      throw reject();
    }
    const key = await this.keys.verificationKey(kid);
    if (!key) throw reject();
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: [SIGNING_ALG],
        issuer: this.issuer,
        audience: audiences,
        currentDate: this.clock(),
        requiredClaims: ["sub", "exp", "aud"],
      });
      const aud = Array.isArray(payload.aud) ? payload.aud.find((a) => audiences.includes(a)) : payload.aud;
      if (!payload.sub || !aud || payload.exp === undefined) throw reject();
      return { subject: payload.sub, audience: aud, expiry: new Date(payload.exp * 1000) };
    } catch {
      throw reject();
    }
  }
}
