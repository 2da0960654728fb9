/** The email throttle on the database: 5 per address and 20 per IP address in any hour, across instances. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoEmailThrottleStore } from '../../src/data/email-throttle.js';
import { EmailThrottle } from '../../src/domain/email/throttle.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('email throttle', () => {
  let t: TestApp;
  let store: MongoEmailThrottleStore;
  // From the real time on: the documents' expiry follows the clock, and the database's TTL monitor
  // would remove documents whose expiry is already past while a test reads them.
  let clock = new Date();
  const throttleAt = () => new EmailThrottle({ store, now: () => clock });

  beforeAll(async () => {
    t = await startTestApp();
    store = new MongoEmailThrottleStore(t.connection);
    await store.init();
  });
  afterAll(() => t.close());

  it('admits 5 emails to an address in an hour and refuses the 6th until the oldest leaves the window', async () => {
    const throttle = throttleAt();
    const start = clock.getTime();
    for (let i = 0; i < 5; i++) {
      clock = new Date(start + i * 60_000);
      expect(await throttle.admit('cleo@example.com', `10.0.0.${i}`)).toEqual({ ok: true });
    }
    clock = new Date(start + 10 * 60_000);
    expect(await throttle.admit('Cleo@Example.com', '10.0.1.1')).toEqual({ ok: false, retryAfterSeconds: 50 * 60 });
    clock = new Date(start + 60 * 60_000 + 1);
    expect(await throttle.admit('cleo@example.com', '10.0.1.1')).toEqual({ ok: true });
    expect(await throttle.admit('cleo@example.com', '10.0.1.1')).toMatchObject({ ok: false });
  });

  it('admits 20 emails from one IP address in an hour, whatever the addresses', async () => {
    const throttle = throttleAt();
    for (let i = 0; i < 20; i++) expect(await throttle.admit(`many-${i}@example.com`, '192.0.2.7')).toEqual({ ok: true });
    const refused = await throttle.admit('one-more@example.com', '192.0.2.7');
    expect(refused).toMatchObject({ ok: false });
    // Refused by its IP address, the address's own count was not used up.
    expect(await throttle.admit('one-more@example.com', '192.0.2.8')).toEqual({ ok: true });
  });

  it('a concurrent burst to one address admits exactly 5', async () => {
    const throttle = throttleAt();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => throttle.admit('burst@example.com', `198.51.100.${i}`)));
    expect(results.filter((r) => r.ok)).toHaveLength(5);
  });
});
