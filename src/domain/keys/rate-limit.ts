import { AppError } from '../errors.js';

/** Length of one rate-limit window: the limit is per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/**
 * The shared count behind the rate limit (src/data/rate-limits.ts: one MongoDB document per key and
 * window, so every gateway on the database counts against the same figure).
 */
export interface RateLimitCounter {
  /**
   * Adds `cost` to the key's count for the window that starts at `windowStart`, unless the count would
   * then pass `limit`: one guarded atomic update. Returns whether it was added and the count after it
   * (accepted) or as it stands (refused). `expiresAt`: when the window's count may be forgotten.
   */
  add(keyId: string, windowStart: Date, cost: number, limit: number, expiresAt: Date): Promise<{ accepted: boolean; count: number }>;
}

/** What a `take` decided: an expected outcome, never a throw. */
export interface RateLimitOutcome {
  ok: boolean;
  /** Units per window (the key's own limit, or RATE_LIMIT_PER_MINUTE). */
  limit: number;
  /** Units left in this window after this request (unchanged by a refused one). */
  remaining: number;
  /** Seconds until the window resets (at least 1): the refusal's Retry-After. */
  resetSeconds: number;
}

/** The window `nowMs` falls in: aligned on the minute, so every instance agrees without talking. */
export function windowAt(nowMs: number): { start: number; resetSeconds: number } {
  const start = Math.floor(nowMs / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS;
  return { start, resetSeconds: Math.max(1, Math.ceil((start + RATE_LIMIT_WINDOW_MS - nowMs) / 1000)) };
}

/**
 * Units per minute per API key, shared by every gateway on the database (client tokens count against
 * their key). Fixed one-minute windows: one guarded update per request and an exact count, at the
 * price of up to twice the limit in a burst that straddles a window boundary (a sliding estimate from
 * two windows would need the previous window's count too: a second read, or a pipeline update).
 * A refused request adds nothing, so a large cost refused leaves the rest of the window usable.
 */
export class RateLimiter {
  private readonly now: () => number;

  constructor(private readonly deps: { counter: RateLimitCounter; perMinute: number; now?: () => number; onRefused?: () => void }) {
    this.now = deps.now ?? Date.now;
  }

  /** False when RATE_LIMIT_PER_MINUTE is 0: then nobody should call `take` for a key without its own limit. */
  get enabled(): boolean {
    return this.deps.perMinute > 0;
  }

  /** The limit of a key: its own (`rateLimitPerMinute`), else RATE_LIMIT_PER_MINUTE; 0: none (no database work). */
  limitFor(own: number | null | undefined): number {
    return own ?? this.deps.perMinute;
  }

  /**
   * Counts `cost` units (1 per request; the GraphQL door: the catalog's units of each charging field)
   * against `keyId`, under `limit` (default RATE_LIMIT_PER_MINUTE; a key's own limit replaces it).
   */
  async take(keyId: string, cost = 1, limit = this.deps.perMinute): Promise<RateLimitOutcome> {
    if (!Number.isInteger(cost) || cost < 0) throw new Error(`rate limit cost must be a non-negative integer, got ${cost}`);
    const nowMs = this.now();
    const window = windowAt(nowMs);
    if (limit <= 0) return { ok: true, limit, remaining: limit, resetSeconds: window.resetSeconds };
    // Kept one window past its end, so a slow clock on another instance still finds it.
    const expiresAt = new Date(window.start + 2 * RATE_LIMIT_WINDOW_MS);
    const { accepted, count } = await this.deps.counter.add(keyId, new Date(window.start), cost, limit, expiresAt);
    if (!accepted) this.deps.onRefused?.();
    return { ok: accepted, limit, remaining: Math.max(0, limit - count), resetSeconds: window.resetSeconds };
  }
}

/** The 429 of a refused take, its Retry-After the window's reset. */
export function rateLimitedError(outcome: RateLimitOutcome): AppError {
  return new AppError('rate_limited', { retryAfter: outcome.resetSeconds });
}
