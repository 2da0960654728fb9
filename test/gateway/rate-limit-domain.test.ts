import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/domain/errors.js';
import { RateLimiter, rateLimitedError, windowAt } from '../../src/domain/keys/rate-limit.js';
import { rateLimitHeaders } from '../../src/edge/rate-limit-headers.js';
import { MemoryRateLimitCounter } from './memory-fakes.js';

/** The rate limit's window arithmetic and outcomes, against the in-memory counter (no database). */

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 24, 21, 0, 0);

describe('windowAt', () => {
  it('aligns windows on the minute, so every instance names the same one', () => {
    expect(windowAt(T0)).toEqual({ start: T0, resetSeconds: 60 });
    expect(windowAt(T0 + 1)).toEqual({ start: T0, resetSeconds: 60 });
    expect(windowAt(T0 + 43_000)).toEqual({ start: T0, resetSeconds: 17 });
    expect(windowAt(T0 + 59_001)).toEqual({ start: T0, resetSeconds: 1 });
    expect(windowAt(T0 + MINUTE - 1)).toEqual({ start: T0, resetSeconds: 1 });
    expect(windowAt(T0 + MINUTE)).toEqual({ start: T0 + MINUTE, resetSeconds: 60 });
  });
});

describe('RateLimiter', () => {
  function limiter(perMinute: number) {
    const clock = { now: T0 + 10_000 };
    const counter = new MemoryRateLimitCounter();
    return { clock, counter, limiter: new RateLimiter({ counter, perMinute, now: () => clock.now }) };
  }

  it('counts units per key and window, and says what is left and when it resets', async () => {
    const { limiter: l, clock } = limiter(3);
    expect(await l.take('k')).toEqual({ ok: true, limit: 3, remaining: 2, resetSeconds: 50 });
    expect(await l.take('k', 2)).toEqual({ ok: true, limit: 3, remaining: 0, resetSeconds: 50 });
    clock.now += 5_500;
    expect(await l.take('k')).toEqual({ ok: false, limit: 3, remaining: 0, resetSeconds: 45 });
    expect(await l.take('other')).toMatchObject({ ok: true, remaining: 2 });
    clock.now = T0 + MINUTE;
    expect(await l.take('k')).toEqual({ ok: true, limit: 3, remaining: 2, resetSeconds: 60 });
  });

  it('a refused cost adds nothing: what is left stays usable by smaller requests', async () => {
    const { limiter: l } = limiter(15);
    expect(await l.take('k', 10)).toMatchObject({ ok: true, remaining: 5 });
    expect(await l.take('k', 15)).toMatchObject({ ok: false, remaining: 5 });
    expect(await l.take('k', 16)).toMatchObject({ ok: false, remaining: 5 });
    expect(await l.take('k', 5)).toMatchObject({ ok: true, remaining: 0 });
  });

  it('with no limit, takes nothing from the counter', async () => {
    const { limiter: l, counter } = limiter(0);
    expect(l.enabled).toBe(false);
    expect(await l.take('k', 100)).toMatchObject({ ok: true });
    expect(counter.counts.size).toBe(0);
  });

  it('refuses a cost that is not a non-negative integer (a fault of the door)', async () => {
    const { limiter: l } = limiter(3);
    await expect(l.take('k', -1)).rejects.toThrow(/non-negative integer/);
    await expect(l.take('k', 1.5)).rejects.toThrow(/non-negative integer/);
  });

  it('a refusal is a 429 rate_limited whose Retry-After is the reset', () => {
    const err = rateLimitedError({ ok: false, limit: 3, remaining: 0, resetSeconds: 17 });
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('rate_limited');
    expect(err.httpStatus).toBe(429);
    expect(err.retryAfter).toBe(17);
  });
});

describe('rateLimitHeaders (draft-ietf-httpapi-ratelimit-headers-11)', () => {
  it('names the policy and its state as Structured Field lists', () => {
    expect(rateLimitHeaders({ ok: true, limit: 100, remaining: 42, resetSeconds: 17 })).toEqual({
      'ratelimit-policy': '"default";q=100;w=60',
      ratelimit: '"default";r=42;t=17',
    });
  });
});
