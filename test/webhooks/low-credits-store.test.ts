// The credits.low guards on the account document: fire and re-arm act only when the current balance
// agrees with the balance observed, so a late observer cannot fire on a balance that has moved back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoLowCreditsStore } from '../../src/data/low-credits.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let store: MongoLowCreditsStore;
const actor = { actor: 'test', ip: null, host: 'test' };
const event = (credits: number) => ({ eventId: `msg_${credits}_${Math.random()}`, credits, threshold: 10, at: new Date() });

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false' });
  store = new MongoLowCreditsStore(t.connection);
  await store.init();
});
afterAll(async () => t?.close());

describe('MongoLowCreditsStore', () => {
  it('fires once while below the threshold and armed; not for a balance that has since gone up; re-arms at or above it', async () => {
    const account = await t.services.credits.createAccount('low', 9, actor);
    expect(await store.state(account.id)).toEqual({ threshold: 10, armed: true });
    // The balance is 9 but an observer saw 8 (a refund came in between): only the refund's own observation counts.
    expect(await store.fire(account.id, 8, event(8))).toBe(false);
    expect(await store.fire(account.id, 9, event(9))).toBe(true);
    expect(await store.fire(account.id, 9, event(9))).toBe(false);
    expect(await store.state(account.id)).toEqual({ threshold: 10, armed: false });
    expect(await store.overdue(new Date(Date.now() + 1000), 10)).toEqual([{ accountId: account.id, event: expect.objectContaining({ credits: 9, threshold: 10 }) }]);
    // Not at 9 (below), nor for an observed 12 while the balance is still 9.
    expect(await store.rearm(account.id, 9)).toBe(false);
    expect(await store.rearm(account.id, 12)).toBe(false);
    await t.services.credits.grant(account.id, 3, `g-${Date.now()}`, actor);
    expect(await store.state(account.id)).toEqual({ threshold: 10, armed: true });
  });

  it('a threshold set in the console applies to later charges and sends nothing itself', async () => {
    const account = await t.services.credits.createAccount('low2', 50, actor);
    expect(await store.setThreshold(account.id, 60)).toEqual({ threshold: 60, armed: false });
    expect(await store.overdue(new Date(Date.now() + 1000), 100)).not.toContainEqual(expect.objectContaining({ accountId: account.id }));
    expect(await store.setThreshold(account.id, 40)).toEqual({ threshold: 40, armed: true });
    expect(await store.fire(account.id, 50, event(50))).toBe(false);
    await t.services.credits.charge(account.id, 15, null);
    // The charge observed 35 < 40 with the alert armed: fired in the same path.
    expect(await store.state(account.id)).toEqual({ threshold: 40, armed: false });
  });
});
