/**
 * The sign-in throttle's store on the test database, with a clock of the test's own: reservations
 * under the limit, after a lock expires (one at a time), and what a right password forgives.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoThrottleStore } from '../../src/data/console.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let store: MongoThrottleStore;
beforeAll(async () => {
  t = await startTestApp();
  store = new MongoThrottleStore(t.connection);
  await store.init();
});
afterAll(async () => {
  await t?.close();
});

const WINDOW_MS = 15 * 60_000;
// Today, not a fixed date: documents are forgotten a day after their last write (a TTL index), and the
// database's TTL monitor would delete a document dated in the past in the middle of a test.
const BASE = Date.now();
const at = (ms: number) => new Date(BASE + ms);
const windowStartAt = (ms: number) => new Date(at(ms).getTime() - WINDOW_MS);
const reserve = (subject: string, ms: number, max = 3) => store.reserve(subject, at(ms), windowStartAt(ms), max);

describe('sign-in throttle store', () => {
  it('reserves up to the limit at once; attempts still pending fill it', async () => {
    const subject = `email:${randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 8 }, () => reserve(subject, 0)));
    expect(results.filter((r) => r.reserved)).toHaveLength(3);
    const refused = results.find((r) => !r.reserved);
    expect(refused).toMatchObject({ reserved: false, state: { failures: 3, pending: 3, lockedUntil: null } });
  });

  it('a lock refuses until it ends; then one attempt at a time, and a new window after windowMs', async () => {
    const subject = `email:${randomUUID()}`;
    for (let i = 0; i < 3; i++) expect(await reserve(subject, 0)).toEqual({ reserved: true });
    for (let i = 0; i < 3; i++) await store.judgedWrong(subject);
    await store.lock(subject, at(0), at(60_000));
    // A second lock while the first holds changes nothing (concurrent failures lock once).
    await store.lock(subject, at(1), at(120_000));
    expect(await reserve(subject, 59_999)).toMatchObject({ reserved: false, state: { lockedUntil: at(60_000), lockouts: 1 } });

    const afterLock = await Promise.all([reserve(subject, 60_000), reserve(subject, 60_000), reserve(subject, 60_000)]);
    expect(afterLock.filter((r) => r.reserved)).toHaveLength(1);
    expect(await store.judgedWrong(subject)).toMatchObject({ failures: 4, pending: 0, lockouts: 1 });

    // The window (opened at 0) is over: a fresh one, whatever the count.
    expect(await reserve(subject, WINDOW_MS + 1)).toEqual({ reserved: true });
    expect(await store.get(subject)).toMatchObject({ failures: 1, pending: 1, windowStart: at(WINDOW_MS + 1) });
  });

  it('a right password forgives judged failures and the lock, not attempts still pending; release gives one back', async () => {
    const subject = `email:${randomUUID()}`;
    for (let i = 0; i < 3; i++) await reserve(subject, 0);
    await store.judgedWrong(subject);
    await store.lock(subject, at(0), at(60_000));
    // Two pending: one right, one still being judged.
    await store.forgive(subject);
    expect(await store.get(subject)).toMatchObject({ failures: 1, pending: 1, lockedUntil: null, lockouts: 0 });
    await store.release(subject);
    expect(await store.get(subject)).toMatchObject({ failures: 0, pending: 0 });
    // Nothing pending: release and judgedWrong change nothing.
    await store.release(subject);
    expect(await store.judgedWrong(subject)).toBeNull();
    expect(await store.get(subject)).toMatchObject({ failures: 0, pending: 0 });
  });
});
