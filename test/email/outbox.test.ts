/**
 * The email outbox on the real store: a failed send stays in the outbox and is sent by a later sweep,
 * after a backoff; an entry whose every attempt failed is given up (and reported), not retried forever.
 * Its clock is in 2099, so the test gateway's own sweep (real time) never finds these entries due.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoEmailOutboxStore } from '../../src/data/email-outbox.js';
import { EmailOutbox } from '../../src/domain/email/outbox.js';
import type { OutboxEntry } from '../../src/domain/email/ports.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

let t: TestApp;
let store: MongoEmailOutboxStore;
beforeAll(async () => {
  t = await startTestApp();
  store = new MongoEmailOutboxStore(t.connection);
  await store.init();
});
afterAll(async () => {
  await t?.close();
});

describe('email outbox', () => {
  it('a failed send is retried by a sweep once its backoff passed, then removed', async () => {
    let clock = new Date('2099-03-01T10:00:00Z');
    const attempts: OutboxEntry[] = [];
    const errors: boolean[] = [];
    const outbox = new EmailOutbox({
      store,
      now: () => clock,
      handlers: {
        test: async (entry) => {
          attempts.push(entry);
          if (attempts.length === 1) throw new Error('mail server down');
        },
      },
      onError: (_err, _entry, givenUp) => errors.push(givenUp),
    });
    await outbox.enqueue('test', 'retry@example.com', { n: 1 });
    await until(() => errors.length === 1, 'the first send failed');
    const collection = t.connection.db!.collection('email_outbox');
    await until(async () => (await collection.findOne({ to: 'retry@example.com' }))?.claimedUntil > clock, 'the retry scheduled');
    expect(await outbox.sweep()).toBe(0);
    clock = new Date(clock.getTime() + 60_000);
    expect(await outbox.sweep()).toBe(1);
    expect(attempts.map((a) => a.attempts)).toEqual([1, 2]);
    expect(errors).toEqual([false]);
    expect(await collection.countDocuments({ to: 'retry@example.com' })).toBe(0);
  });

  it('an entry that fails every attempt is given up after the last one', async () => {
    let clock = new Date('2099-03-02T10:00:00Z');
    const errors: boolean[] = [];
    const outbox = new EmailOutbox({
      store,
      now: () => clock,
      handlers: { test: () => Promise.reject(new Error('refused')) },
      onError: (_err, _entry, givenUp) => errors.push(givenUp),
    });
    await outbox.enqueue('test', 'never@example.com', {});
    await until(() => errors.length === 1, 'the first send failed');
    for (let i = 0; i < 20 && errors.at(-1) !== true; i++) {
      clock = new Date(clock.getTime() + 3_600_000);
      await outbox.sweep();
    }
    expect(errors).toEqual([...Array(9).fill(false), true]);
    expect(await t.connection.db!.collection('email_outbox').countDocuments({ to: 'never@example.com' })).toBe(0);
  });

  it('refuses a kind it has no handler for, storing nothing', async () => {
    const outbox = new EmailOutbox({ store, handlers: {} });
    await expect(outbox.enqueue('unknown', 'x@example.com', {})).rejects.toThrow('no handler for unknown');
    expect(await t.connection.db!.collection('email_outbox').countDocuments({ to: 'x@example.com' })).toBe(0);
  });
});
