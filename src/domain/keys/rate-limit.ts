import { AppError } from '../errors.js';

/** Length of one rate-limit window: the limit is per minute. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/**
 * The shared count behind the rate limit (src/data/rate-limits.ts: one MongoDB document per key and
 * window, so every gateway on the database counts against the same figure). docs/keys.md states the
 * bound the slices keep (never over the limit; at most 1.5% of it per instance left unused).
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
 * Below this limit every unit is counted in the shared count as it is taken (one guarded update per
 * request): a slice of 1% would be less than one unit.
 */
export const SLICED_FROM = 200;

/**
 * What this instance holds of a key's window: units it took from the shared count in one step (a
 * slice) and has not handed out yet. Every unit handed out was counted in the shared count first, so
 * no instance, however many there are, admits more than the limit in a window.
 */
interface Slice {
  window: number;
  /** Units taken from the shared count and not yet handed out. */
  left: number;
  /** The shared count as of this instance's last step (its own slices included). */
  count: number;
  /** The next slice's size: doubled while slices run out within the window, at most 1% of the limit. */
  size: number;
  /** A slice being taken (at most one per key at a time). */
  taking?: Promise<void>;
  /** The shared count refused a slice in this window: from now on every unit goes to it alone. */
  exhausted: boolean;
}

/**
 * Units per minute per API key, shared by every gateway on the database (client tokens count against
 * their key). Fixed one-minute windows, at the price of up to twice the limit in a burst that
 * straddles a window boundary (a sliding estimate from two windows would need the previous window's
 * count too). A refused request adds nothing, so a large cost refused leaves the rest of the window usable.
 *
 * Where a limit is large (SLICED_FROM and above), an instance takes units from the shared count a
 * slice at a time (from 1 unit, doubling while they run out, at most 1% of the limit) and hands them out
 * without a round trip; it takes the next slice when half of one is left, so requests rarely wait for
 * it. Every unit is counted before it is handed out: no window ever admits more than the limit, on any
 * number of instances. What a slice leaves unused (an idle or stopped instance) is at most 1% of the
 * limit per instance, and only near the end of a window's budget can it make others refuse early;
 * when a slice no longer fits, every request is counted alone, exactly, as below SLICED_FROM.
 */
export class RateLimiter {
  private readonly now: () => number;
  private readonly slices = new Map<string, Slice>();

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
    if (limit < SLICED_FROM) return this.counted(keyId, window, cost, limit);
    const slice = this.sliceOf(keyId, window.start);
    while (slice.left < cost && !slice.exhausted) {
      // Wait for the slice being taken (or take one), then look again.
      await (slice.taking ?? this.takeSlice(keyId, slice, limit, cost));
    }
    if (slice.left < cost) {
      // The shared count only grows within a window: once it stands at the limit, every later request
      // of the window is refused, known here without asking again.
      if (slice.count >= limit) {
        this.deps.onRefused?.();
        return { ok: false, limit, remaining: 0, resetSeconds: window.resetSeconds };
      }
      const outcome = await this.counted(keyId, window, cost, limit);
      slice.count = Math.max(slice.count, limit - outcome.remaining);
      return outcome;
    }
    slice.left -= cost;
    if (slice.left * 2 < slice.size && !slice.taking && !slice.exhausted) {
      // Taken ahead; a failure here is met again by the request that needs the slice.
      this.takeSlice(keyId, slice, limit, 0).catch(() => undefined);
    }
    return { ok: true, limit, remaining: Math.max(0, limit - slice.count + slice.left), resetSeconds: window.resetSeconds };
  }

  /** `cost` units counted alone in the shared count (one guarded update). */
  private async counted(keyId: string, window: { start: number; resetSeconds: number }, cost: number, limit: number): Promise<RateLimitOutcome> {
    const { accepted, count } = await this.deps.counter.add(keyId, new Date(window.start), cost, limit, expiryOf(window.start));
    if (!accepted) this.deps.onRefused?.();
    return { ok: accepted, limit, remaining: Math.max(0, limit - count), resetSeconds: window.resetSeconds };
  }

  private sliceOf(keyId: string, window: number): Slice {
    let slice = this.slices.get(keyId);
    if (slice?.window !== window) {
      // A new window: what was left of the last one's slice is gone with it, and so are other keys' old ones.
      if (this.slices.size >= 10_000) for (const [k, old] of this.slices) if (old.window < window) this.slices.delete(k);
      slice = { window, left: 0, count: 0, size: slice ? Math.max(1, slice.size >> 1) : 1, exhausted: false };
      this.slices.set(keyId, slice);
    }
    return slice;
  }

  /** Takes the next slice (at least `need` units) from the shared count; a refusal marks the window exhausted. */
  private takeSlice(keyId: string, slice: Slice, limit: number, need: number): Promise<void> {
    const max = Math.max(1, Math.floor(limit / 100));
    const size = Math.max(need, Math.min(slice.size, max));
    const taking = this.deps.counter
      .add(keyId, new Date(slice.window), size, limit, expiryOf(slice.window))
      .then(({ accepted, count }) => {
        slice.count = count;
        if (!accepted) {
          slice.exhausted = true;
          return;
        }
        slice.left += size;
        slice.size = Math.min(max, size * 2);
      })
      .finally(() => {
        if (slice.taking === taking) slice.taking = undefined;
      });
    slice.taking = taking;
    return taking;
  }
}

/** A window's count is kept one window past its end, so a slow clock on another instance still finds it. */
function expiryOf(windowStart: number): Date {
  return new Date(windowStart + 2 * RATE_LIMIT_WINDOW_MS);
}

/** The 429 of a refused take, its Retry-After the window's reset. */
export function rateLimitedError(outcome: RateLimitOutcome): AppError {
  return new AppError('rate_limited', { retryAfter: outcome.resetSeconds });
}
