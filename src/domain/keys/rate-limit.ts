import { AppError } from '../errors.js';

/**
 * Requests per minute per API key, counted per gateway instance (fixed one-minute windows). With N
 * instances behind a balancer a key gets up to N × the limit; a shared limit would cost a database
 * write per request, which is what this gateway avoids on its hot path.
 */
export class RateLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private lastPrune = 0;

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request of `keyId`; AppError rate_limited (with Retry-After) when over the limit. */
  take(keyId: string): void {
    if (this.perMinute <= 0) return;
    const now = this.now();
    this.prune(now);
    let window = this.windows.get(keyId);
    if (!window || now - window.start >= 60_000) {
      window = { start: now, count: 0 };
      this.windows.set(keyId, window);
    }
    if (window.count >= this.perMinute) {
      throw new AppError('rate_limited', { retryAfter: Math.max(1, Math.ceil((window.start + 60_000 - now) / 1000)) });
    }
    window.count++;
  }

  private prune(now: number): void {
    if (now - this.lastPrune < 60_000) return;
    this.lastPrune = now;
    for (const [keyId, w] of this.windows) if (now - w.start >= 60_000) this.windows.delete(keyId);
  }
}
