import type { MintedToken, TokenService } from "./tokens.js";
import { writeAdminToken } from "./bootstrap.js";

export interface AdminTokenRenewalOptions {
  dataDir: string;
  tokens: TokenService;
  /** The bootstrap identity the token is for. */
  identityUid: string;
  /** The API base URL: the token's audience. */
  audience: string;
  clock: () => Date;
  /** How often (real time) the file's token is looked at. */
  checkEveryMs: number;
  onRenewed(token: MintedToken): void;
  onError(cause: unknown): void;
}

/**
 * Keeps `<data dir>/admin-token` valid while the server runs (docs/operations.md,
 * "Admin token"): once less than half of the written token's lifetime is
 * left, a fresh one replaces it. The check runs on a short timer and
 * compares times from the server's clock, so a machine that slept, or a
 * timer that fired late, still renews on the next check.
 */
export class AdminTokenRenewal {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly opts: AdminTokenRenewalOptions,
    private current: MintedToken,
    private issuedAt: Date,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.renewIfDue(), this.opts.checkEveryMs);
    // The renewal alone never keeps the process alive.
    this.timer.unref();
  }

  /** Stops the timer and waits for a renewal in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Renews when half of the current token's lifetime has passed; one renewal at a time. */
  renewIfDue(): Promise<void> {
    this.running ??= this.renew().finally(() => (this.running = undefined));
    return this.running;
  }

  private async renew(): Promise<void> {
    const now = this.opts.clock();
    const lifetime = this.current.expiry.getTime() - this.issuedAt.getTime();
    if (now.getTime() < this.issuedAt.getTime() + lifetime / 2) return;
    try {
      const token = await this.opts.tokens.mint(this.opts.identityUid, this.opts.audience);
      await writeAdminToken(this.opts.dataDir, token);
      this.current = token;
      this.issuedAt = now;
      this.opts.onRenewed(token);
    } catch (e) {
      // Retried at the next check; the old token stays in place until then.
      this.opts.onError(e);
    }
  }
}
