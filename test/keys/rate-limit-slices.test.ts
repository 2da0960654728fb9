import type { Connection } from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectDatabase } from '../../src/data/connection.js';
import { MongoRateLimitCounter } from '../../src/data/rate-limits.js';
import { RateLimiter, SLICED_FROM, type RateLimitCounter } from '../../src/domain/keys/rate-limit.js';

/**
 * The shared rate limit without a round trip per request (issue 33): from SLICED_FROM units a minute,
 * each instance takes units from the shared count (MongoDB) a slice at a time and hands them out from
 * memory. Several limiters on one database stand for as many gateway instances.
 */
const MINUTE = 60_000;
// In the future: the TTL index would remove windows that ended before the real clock.
const T0 = Date.UTC(2099, 5, 1, 12, 0, 0);
let connection: Connection;
let counter: MongoRateLimitCounter;

beforeAll(async () => {
  connection = await connectDatabase(inject('mongoUri'), { dbName: `t_rate_slices_${process.pid}` });
  await connection.dropDatabase();
  counter = new MongoRateLimitCounter(connection);
  await counter.init();
});
afterAll(async () => {
  await connection?.dropDatabase();
  await connection?.close();
});

/** `n` instances on the shared count, with one clock, counting their round trips to it. */
function instances(n: number, clock: { now: number }) {
  const trips = { n: 0 };
  const counting: RateLimitCounter = {
    add: (...args) => {
      trips.n++;
      return counter.add(...args);
    },
  };
  return { trips, limiters: Array.from({ length: n }, () => new RateLimiter({ counter: counting, perMinute: 0, now: () => clock.now })) };
}

const shared = async (keyId: string, window: number) => (await connection.db!.collection('rate_limits').findOne({ _id: `${keyId}:${window}` as never }))?.n ?? 0;

describe('sliced rate limit', () => {
  it('900 requests within a limit of 1,000 over four instances: all admitted, in far fewer round trips than requests', async () => {
    const clock = { now: T0 + 5_000 };
    const { trips, limiters } = instances(4, clock);
    const outcomes = await Promise.all(Array.from({ length: 900 }, (_, i) => limiters[i % 4]!.take('key-a', 1, 1000)));
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(trips.n).toBeLessThan(900 / 5);
    // Counted before handed out: the shared count covers every unit admitted.
    expect(await shared('key-a', T0)).toBeGreaterThanOrEqual(900);
    expect(await shared('key-a', T0)).toBeLessThanOrEqual(1000);
  });

  it('3,000 concurrent requests over five instances against a limit of 1,000: exactly 1,000 admitted (never over), the rest refused', async () => {
    const clock = { now: T0 + MINUTE + 1_000 };
    const { limiters } = instances(5, clock);
    const outcomes = await Promise.all(Array.from({ length: 3000 }, (_, i) => limiters[i % 5]!.take('key-b', 1, 1000)));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(1000);
    for (const o of outcomes.filter((o) => !o.ok)) expect(o).toMatchObject({ limit: 1000, remaining: 0, resetSeconds: 59 });
    expect(await shared('key-b', T0 + MINUTE)).toBe(1000);
  });

  it('units of several at once (GraphQL fields) and a cost over what is left: never over the limit, the rest of the window still usable', async () => {
    const clock = { now: T0 + 2 * MINUTE };
    const { limiters } = instances(3, clock);
    const costs = Array.from({ length: 600 }, (_, i) => 1 + (i % 4));
    const outcomes = await Promise.all(costs.map((c, i) => limiters[i % 3]!.take('key-c', c, 500)));
    const admitted = outcomes.reduce((sum, o, i) => sum + (o.ok ? costs[i]! : 0), 0);
    expect(admitted).toBeLessThanOrEqual(500);
    expect(admitted).toBeGreaterThan(500 - 4);
    expect(await shared('key-c', T0 + 2 * MINUTE)).toBeLessThanOrEqual(500);
  });

  it('the next window starts afresh on every instance; below SLICED_FROM every request is counted alone', async () => {
    const clock = { now: T0 + 3 * MINUTE };
    const { trips, limiters } = instances(2, clock);
    for (let i = 0; i < 10; i++) expect(await limiters[i % 2]!.take('key-d', 1, 1000)).toMatchObject({ ok: true });
    clock.now = T0 + 4 * MINUTE;
    expect(await Promise.all(limiters.map((l) => l.take('key-d', 1, 1000)))).toEqual([
      expect.objectContaining({ ok: true, resetSeconds: 60 }),
      expect.objectContaining({ ok: true, resetSeconds: 60 }),
    ]);
    expect(await shared('key-d', T0 + 4 * MINUTE)).toBeGreaterThanOrEqual(2);
    const before = trips.n;
    const small = await Promise.all(Array.from({ length: 12 }, (_, i) => limiters[i % 2]!.take('key-e', 1, SLICED_FROM - 1)));
    expect(small.every((o) => o.ok)).toBe(true);
    expect(trips.n - before).toBe(12);
    expect(small.map((o) => o.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 12 }, (_, i) => SLICED_FROM - 13 + i));
  });
});
