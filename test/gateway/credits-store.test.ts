import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Connection } from 'mongoose';
import { MongoAccountStore } from '../../src/data/accounts.js';
import { connectDatabase } from '../../src/data/connection.js';

/** The guarded update on the real (embedded) database: at most once per op id, never below zero. */
let connection: Connection;
let store: MongoAccountStore;

beforeAll(async () => {
  connection = await connectDatabase(inject('mongoUri'), { dbName: `t_credits_store_${process.pid}` });
  await connection.dropDatabase();
  store = new MongoAccountStore(connection);
  await store.init();
});
afterAll(async () => {
  await connection?.dropDatabase();
  await connection?.close();
});

describe('MongoAccountStore', () => {
  it('the same op id sent 20 times at once applies once', async () => {
    const a = await store.create('a', 10, new Date());
    const results = await Promise.all(Array.from({ length: 20 }, () => store.apply(a.id, -3, 'op-same')));
    expect(results.filter((r) => r.kind === 'applied')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'already_applied')).toHaveLength(19);
    expect(await store.balances([a.id])).toEqual([7]);
  });

  it('50 distinct charges of 1 against 30 credits: 30 applied, 20 insufficient, balance 0', async () => {
    const a = await store.create('b', 30, new Date());
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => store.apply(a.id, -1, `op-${i}`)));
    expect(results.filter((r) => r.kind === 'applied')).toHaveLength(30);
    expect(results.filter((r) => r.kind === 'insufficient')).toHaveLength(20);
    expect(new Set(results.flatMap((r) => (r.kind === 'applied' ? [r.balance] : []))).size).toBe(30);
    expect(await store.balances([a.id])).toEqual([0]);
  });

  it('voidOp: a voided op never applies; an applied one reports so; unknown accounts are told apart', async () => {
    const a = await store.create('c', 5, new Date());
    expect(await store.voidOp(a.id, 'job:1')).toBe('voided');
    expect(await store.apply(a.id, -2, 'job:1')).toEqual({ kind: 'voided', balance: 5 });
    // Two sweeps voiding the same op both hear 'voided' (neither may take it for a charge that applied).
    expect(await Promise.all([store.voidOp(a.id, 'job:3'), store.voidOp(a.id, 'job:3')])).toEqual(['voided', 'voided']);
    expect(await store.voidOp(a.id, 'job:3')).toBe('voided');
    await store.settle(a.id, 'job:3');
    expect(await store.apply(a.id, -2, 'job:3')).toEqual({ kind: 'voided', balance: 5 });
    await store.apply(a.id, -2, 'job:2');
    expect(await store.voidOp(a.id, 'job:2')).toBe('already_applied');
    expect(await store.voidOp('0'.repeat(24), 'x')).toBe('unknown_account');
    expect(await store.apply('0'.repeat(24), -1, 'x')).toEqual({ kind: 'unknown_account' });
    expect(await store.apply('not-an-id', -1, 'x')).toEqual({ kind: 'unknown_account' });
  });

  it('one-shot changes record nothing, so an unsettled op id outlives any number of them; settle forgets one id', async () => {
    const a = await store.create('g', 2000, new Date());
    expect(await store.apply(a.id, -5, 'job:kept')).toEqual({ kind: 'applied', balance: 1995, lowCredits: { threshold: 10, armed: true }, recharge: null });
    expect(await store.apply(a.id, 1, 'refund:kept')).toEqual({ kind: 'applied', balance: 1996, lowCredits: { threshold: 10, armed: true }, recharge: null });
    for (let i = 0; i < 1500; i += 50) await Promise.all(Array.from({ length: 50 }, () => store.apply(a.id, -1, null)));
    const ops = async () => (await connection.db!.collection('accounts').findOne({ name: 'g' }))!.ops;
    expect(await ops()).toEqual(['job:kept', 'refund:kept']);
    // A crash left the charge's outcome unknown: the account still knows it applied.
    expect(await store.voidOp(a.id, 'job:kept')).toBe('already_applied');
    expect(await store.apply(a.id, -5, 'job:kept')).toEqual({ kind: 'already_applied', balance: 496 });
    await store.settle(a.id, 'job:kept');
    expect(await ops()).toEqual(['refund:kept']);
    await store.settle(a.id, 'job:never-applied');
    await store.settle('not-an-id', 'x');
    expect(await ops()).toEqual(['refund:kept']);
    // One-shot charges keep the guard: never below zero.
    const results = await Promise.all(Array.from({ length: 600 }, () => store.apply(a.id, -1, null)));
    expect(results.filter((r) => r.kind === 'applied')).toHaveLength(496);
    expect(results.filter((r) => r.kind === 'insufficient')).toHaveLength(104);
    expect(await store.balances([a.id])).toEqual([0]);
  });

  it('keeps at most 1,000 unsettled op ids on the account', async () => {
    const a = await store.create('d', 0, new Date());
    for (let i = 0; i < 1010; i += 10) await Promise.all(Array.from({ length: 10 }, (_, j) => store.apply(a.id, 1, `g-${i + j}`)));
    const doc = await connection.db!.collection('accounts').findOne({ name: 'd' });
    expect(doc!.ops).toHaveLength(1000);
    expect(doc!.credits).toBe(1010);
  });

  it('balances come back in the order asked, null for unknown ids', async () => {
    const a = await store.create('e', 4, new Date());
    const b = await store.create('f', 9, new Date());
    expect(await store.balances([b.id, 'zz', a.id, '0'.repeat(24)])).toEqual([9, null, 4, null]);
  });
});
