// MongoBillingAccountStore on the real (embedded) database: the recharge claim's guards (one in flight,
// at most maxPerDay per UTC day, concurrent claims) and what a claimed recharge buys. The in-memory fake
// in memory-fakes.ts mirrors these semantics for the domain's unit tests.
import type { Connection } from 'mongoose';
import { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { MongoAccountStore } from '../../src/data/accounts.js';
import { MongoBillingAccountStore } from '../../src/data/billing-accounts.js';
import { connectDatabase } from '../../src/data/connection.js';

let connection: Connection;
let accounts: MongoAccountStore;
let store: MongoBillingAccountStore;

beforeAll(async () => {
  connection = await connectDatabase(inject('mongoUri'), { dbName: `t_billing_accounts_store_${process.pid}` });
  await connection.dropDatabase();
  accounts = new MongoAccountStore(connection);
  await accounts.init();
  store = new MongoBillingAccountStore(connection);
});
afterAll(async () => {
  await connection?.dropDatabase();
  await connection?.close();
});

const at = new Date('2026-03-01T10:00:00Z');
const claim = (id: string, day = '2026-03-01', maxPerDay = 3) => ({ id, at, day, maxPerDay });

/** An account with a saved card and automatic recharge of `credits` below 50. */
async function recharging(credits = 100) {
  const { id } = await accounts.create('store', 10, at);
  await store.markCardSaved(id);
  await store.saveAutoRecharge(id, { enabled: true, threshold: 50, credits });
  return id;
}

describe('MongoBillingAccountStore: claiming a recharge', () => {
  it('20 concurrent claims below the threshold: one wins, counted once that day', async () => {
    const id = await recharging();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.claimRecharge(id, 40, claim(`rch_${i}`))));
    expect(results.filter((r) => r !== null)).toEqual([{ credits: 100 }]);
    expect(await store.rechargesOn(id, '2026-03-01')).toBe(1);
    expect(await store.rechargesOn(id, '2026-03-02')).toBe(0);
  });

  it('claims nothing at or above the threshold, or when turned off', async () => {
    const id = await recharging();
    expect(await store.claimRecharge(id, 50, claim('rch_a'))).toBeNull();
    await store.saveAutoRecharge(id, { enabled: false, threshold: 50, credits: 100 });
    expect(await store.claimRecharge(id, 10, claim('rch_b'))).toBeNull();
    expect(await store.rechargesOn(id, '2026-03-01')).toBe(0);
  });

  it('at most maxPerDay a UTC day, and again the next day', async () => {
    const id = await recharging();
    for (const n of [1, 2]) {
      expect(await store.claimRecharge(id, 40, claim(`rch_day1_${n}`, '2026-03-01', 2))).toEqual({ credits: 100 });
      await store.finishRecharge(id, `rch_day1_${n}`);
    }
    expect(await store.claimRecharge(id, 40, claim('rch_day1_3', '2026-03-01', 2))).toBeNull();
    expect(await store.rechargesOn(id, '2026-03-01')).toBe(2);
    expect(await store.claimRecharge(id, 40, claim('rch_day2_1', '2026-03-02', 2))).toEqual({ credits: 100 });
    expect(await store.rechargesOn(id, '2026-03-02')).toBe(1);
  });

  it("keeps the counts of the claim's day and the day before only: the account document does not grow a key a day", async () => {
    const id = await recharging();
    const counts = async () => (await connection.db!.collection('accounts').findOne({ _id: new Types.ObjectId(id) }))?.rechargeCounts;
    for (const day of ['2026-02-27', '2026-02-28', '2026-03-01']) {
      expect(await store.claimRecharge(id, 40, claim(`rch_${day}`, day))).toEqual({ credits: 100 });
      await store.finishRecharge(id, `rch_${day}`);
    }
    expect(await counts()).toEqual({ '2026-02-28': 1, '2026-03-01': 1 });
    expect(await store.claimRecharge(id, 40, claim('rch_later', '2026-03-09'))).toEqual({ credits: 100 });
    expect(await counts()).toEqual({ '2026-03-09': 1 });
  });

  it('a claimed recharge buys the pack chosen when it was claimed, though the settings change while it is in flight', async () => {
    const id = await recharging(100);
    expect(await store.claimRecharge(id, 40, claim('rch_pack'))).toEqual({ credits: 100 });
    await store.saveAutoRecharge(id, { enabled: true, threshold: 50, credits: 1000 });
    expect((await store.get(id))?.rechargeInFlight).toMatchObject({ id: 'rch_pack', credits: 100 });
  });

  it('a marker written by the previous release (no pack on it) buys the pack of the settings', async () => {
    const id = await recharging(1000);
    await connection.db!.collection('accounts').updateOne({ _id: new Types.ObjectId(id) }, { $set: { rechargeInFlight: { id: 'rch_old', at } } });
    expect((await store.get(id))?.rechargeInFlight).toMatchObject({ id: 'rch_old', credits: 1000 });
    await store.finishRecharge(id, 'rch_old');
    expect((await store.get(id))?.rechargeInFlight).toBeNull();
  });
});

describe('MongoBillingAccountStore: turning automatic recharge off against sending one', () => {
  it('off before the send: not marked sent, and cancelling frees the slot', async () => {
    const id = await recharging();
    expect(await store.claimRecharge(id, 10, claim('rch_off_1'))).toEqual({ credits: 100 });
    await store.saveAutoRecharge(id, { enabled: false, threshold: 50, credits: 100 });
    expect(await store.markRechargeSent(id, 'rch_off_1', at)).toBe(false);
    await store.cancelRecharge(id, 'rch_off_1');
    expect((await store.get(id))!.rechargeInFlight).toBeNull();
  });

  it('off after the send: a retry may still send it, and cancelling leaves it in flight', async () => {
    const id = await recharging();
    await store.claimRecharge(id, 10, claim('rch_off_2'));
    expect(await store.markRechargeSent(id, 'rch_off_2', at)).toBe(true);
    await store.saveAutoRecharge(id, { enabled: false, threshold: 50, credits: 100 });
    expect(await store.markRechargeSent(id, 'rch_off_2', at)).toBe(true);
    await store.cancelRecharge(id, 'rch_off_2');
    expect((await store.get(id))!.rechargeInFlight?.id).toBe('rch_off_2');
    // Another trigger's id is never marked.
    expect(await store.markRechargeSent(id, 'rch_someone_else', at)).toBe(false);
  });
});
