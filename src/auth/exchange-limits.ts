import { isIP } from "node:net";
import { RateLimiterMemory, RateLimiterRes } from "rate-limiter-flexible";
import { rateLimited } from "../errors/index.js";

/** The limits count calls in windows of this many seconds. */
const WINDOW_SECONDS = 60;

export interface ExchangeRates {
  /** Exchanges per minute from one client address (an IPv6 /64); 0: no limit. */
  perAddress: number;
  /** Exchanges per minute naming one identity; 0: no limit. */
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
  return `${groups.slice(0, 4).map((g) => parseInt(g, 16).toString(16)).join(":")}::/64`;
}

/**
 * The token exchange's rate limits, in memory on each replica
 * (docs/security.md, "Outbound budgets"): the exchange is open to anyone,
 * so the calls one address or one identity may make per minute are counted
 * and the rest answered 429 with Retry-After, before anything goes out.
 */
export class ExchangeLimits {
  private readonly byAddress: RateLimiterMemory | undefined;
  private readonly byIdentity: RateLimiterMemory | undefined;

  constructor(rates: ExchangeRates) {
    this.byAddress = rates.perAddress > 0 ? new RateLimiterMemory({ points: rates.perAddress, duration: WINDOW_SECONDS }) : undefined;
    this.byIdentity = rates.perIdentity > 0 ? new RateLimiterMemory({ points: rates.perIdentity, duration: WINDOW_SECONDS }) : undefined;
  }

  /** Counts a call from `address` (the socket's peer); throws RESOURCE_EXHAUSTED over the limit. */
  async fromAddress(address: string | undefined): Promise<void> {
    const key = addressKey(address);
    await take(this.byAddress, key, `clientip:${key}`, "too many token exchanges from this address");
  }

  /** Counts a call naming identity `uid`; throws RESOURCE_EXHAUSTED over the limit. */
  async forIdentity(uid: string): Promise<void> {
    await take(this.byIdentity, uid, `identity:${uid}`, "too many token exchanges for this identity");
  }
}

async function take(limiter: RateLimiterMemory | undefined, key: string, subject: string, what: string): Promise<void> {
  if (!limiter) return;
  try {
    await limiter.consume(key);
  } catch (e) {
    if (!(e instanceof RateLimiterRes)) throw e;
    const seconds = Math.max(1, Math.ceil(e.msBeforeNext / 1000));
    throw rateLimited(subject, `${what}: at most ${limiter.points} per ${WINDOW_SECONDS} s; retry in ${seconds} s`, seconds);
  }
}
