import { isIP } from "node:net";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { rateLimited } from "../errors/index.js";

/** The limits count calls in windows of this many seconds. */
const WINDOW_SECONDS = 60;

export interface ExchangeRates {
  /** Exchanges per minute from one client address (an IPv6 /64); 0: no limit. */
  perAddress: number;
  /** Refused exchanges per minute naming one identity, before it is held to cached keys; 0: no limit. */
  perIdentity: number;
}

/**
 * The address a limit counts: an IPv4 address as it is (an IPv4-mapped IPv6
 * one unwrapped), an IPv6 address by its /64, the least a single host is
 * usually given. Anything else (no address: a closed socket) counts as one.
 */
export function addressKey(address: string | undefined): string {
  if (!address) return "unknown";
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  const bare = address.replace(/%.*$/, "");
  if (isIP(bare) !== 6) return bare;
  const groupsOf = (part: string) => (part ? part.split(":").flatMap((g) => (g.includes(".") ? ["0", "0"] : [g])) : []);
  const [head = "", tail] = bare.split("::");
  const h = groupsOf(head);
  const t = tail === undefined ? [] : groupsOf(tail);
  const groups = tail === undefined ? h : [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t];
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

/**
 * Calls per minute per key, in memory on each replica (docs/security.md,
 * "Outbound budgets"): the one rate limit the token exchange and the browser
 * sign-in count their anonymous callers with. Over it, RESOURCE_EXHAUSTED
 * (429) with the seconds until the window frees a call.
 */
export class PerMinuteLimit {
  private readonly limiter: RateLimiterMemory | undefined;

  /** `perMinute` 0: no limit. `what` starts the refusal's message ("too many … from this address"). */
  constructor(
    perMinute: number,
    private readonly what: string,
  ) {
    this.limiter = perMinute > 0 ? new RateLimiterMemory({ points: perMinute, duration: WINDOW_SECONDS }) : undefined;
  }

  /** Counts a call for `key`; throws RESOURCE_EXHAUSTED (naming `subject`) over the limit. */
  async take(key: string, subject: string): Promise<void> {
    if (!this.limiter) return;
    try {
      await this.limiter.consume(key);
    } catch (e) {
      if (!(e instanceof RateLimiterRes)) throw e;
      throw this.refusal(subject, e.msBeforeNext);
    }
  }

  /** Counts a call for `key` without refusing it (a penalty after the fact). */
  async count(key: string): Promise<void> {
    await this.limiter?.penalty(key, 1);
  }

  /** RESOURCE_EXHAUSTED when `key` is at its limit (nothing counted); undefined otherwise. */
  async over(key: string, subject: string): Promise<Error | undefined> {
    if (!this.limiter) return undefined;
    const used = await this.limiter.get(key);
    if (!used || used.consumedPoints < this.limiter.points) return undefined;
    return this.refusal(subject, used.msBeforeNext);
  }

  private refusal(subject: string, msBeforeNext: number): Error {
    const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
    return rateLimited(subject, `${this.what}: at most ${this.limiter!.points} per ${WINDOW_SECONDS} s; retry in ${seconds} s`, seconds);
  }
}

/** Counts a call from client `address` (the socket's peer) on `limit`, keyed by addressKey. */
export function takeForAddress(limit: PerMinuteLimit, address: string | undefined): Promise<void> {
  const key = addressKey(address);
  return limit.take(key, `clientip:${key}`);
}

/**
 * The token exchange's rate limits (docs/security.md, "Outbound budgets"):
 * the exchange is open to anyone, so the calls one address may make per
 * minute are counted and the rest answered 429 with Retry-After before
 * anything else. Per identity, only refused exchanges are counted: callers
 * who name an identity without its token cannot spend what its workloads'
 * accepted exchanges need (token-exchange.ts says what an identity over its
 * count may still do).
 */
export class ExchangeLimits {
  private readonly byAddress: PerMinuteLimit;
  private readonly refusedByIdentity: PerMinuteLimit;

  constructor(rates: ExchangeRates) {
    this.byAddress = new PerMinuteLimit(rates.perAddress, "too many token exchanges from this address");
    this.refusedByIdentity = new PerMinuteLimit(rates.perIdentity, "too many refused token exchanges for this identity");
  }

  /** Counts a call from `address` (the socket's peer); throws RESOURCE_EXHAUSTED over the limit. */
  fromAddress(address: string | undefined): Promise<void> {
    return takeForAddress(this.byAddress, address);
  }

  /** RESOURCE_EXHAUSTED when identity `uid` has had its limit of refused exchanges this minute; undefined otherwise. */
  identityOver(uid: string): Promise<Error | undefined> {
    return this.refusedByIdentity.over(uid, `identity:${uid}`);
  }

  /** Counts a refused exchange naming identity `uid` (whether it exists or not). */
  refusedFor(uid: string): Promise<void> {
    return this.refusedByIdentity.count(uid);
  }
}
