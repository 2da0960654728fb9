import { Collection } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MongoAccountStore } from '../../src/data/accounts.js';
import { MongoAuditStore } from '../../src/data/audit.js';
import { MongoKeyCreditStore } from '../../src/data/key-credits.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { refillPeriodsAt } from '../../src/domain/keys/credit-limit.js';
import type { KeyRefill } from '../../src/domain/keys/records.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from '../gateway/fakes.js';

/**
 * Limits at the price of a plain charge (issue 33): the usual reservation on a capped key is an
 * operator update, and every rule of Key lifecycle still holds when the gateway knows the key's refill
 * (its cached key) and when what it knows is stale.
 */
const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  a = await startTestApp({ deps: { definitionProvider: new ScriptedProvider() } });
  b = await startTestApp({ deps: { definitionProvider: new ScriptedProvider() } });
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
});
afterEach(() => {
  vi.restoreAllMocks();
});

async function cappedKey(credits: number, settings: Parameters<TestApp['services']['keys']['create']>[3]): Promise<TestAccount> {
  const acct = await a.createAccountWithKey({ credits });
  const created = await a.services.keys.create(acct.accountId, 'capped', actor, settings);
  return { accountId: acct.accountId, keyId: created.id, key: created.key };
}

async function lookup(app: TestApp, key: string, keyword = 'cat') {
  const res = await fetch(`${app.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ keyword }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const balance = async (accountId: string) => (await a.services.credits.getAccount(accountId))!.credits;
const left = async (keyId: string) => (await a.services.keys.get(keyId)).creditsLeft;
const storedKey = (acct: TestAccount) => a.connection.collection('api_keys').findOne({ prefix: acct.key.slice(0, 12) });

/** The update pipelines sent to `api_keys` while `run` runs. */
async function pipelinesOnKeys(run: () => Promise<unknown>): Promise<number> {
  let pipelines = 0;
  for (const method of ['findOneAndUpdate', 'updateOne'] as const) {
    const original = Collection.prototype[method] as (...args: unknown[]) => unknown;
    vi.spyOn(Collection.prototype, method).mockImplementation(function (this: Collection, ...args: unknown[]) {
      if (this.collectionName === 'api_keys' && Array.isArray(args[1])) pipelines++;
      return original.apply(this, args) as never;
    });
  }
  await run();
  vi.restoreAllMocks();
  return pipelines;
}

describe('the usual reservation', () => {
  it('is an operator update, not an update pipeline: a capped lookup over both instances sends none to api_keys once the key is charged', async () => {
    const acct = await cappedKey(100, { creditLimit: 50 });
    // The key's first charge stores its credits left (a key starts with none stored): the pipeline.
    expect((await lookup(a, acct.key)).status).toBe(200);
    const pipelines = await pipelinesOnKeys(() => Promise.all(Array.from({ length: 10 }, (_, i) => lookup(i % 2 ? a : b, acct.key, `w${i}`))));
    expect(pipelines).toBe(0);
    expect(await left(acct.keyId)).toBe(39);
    expect(await balance(acct.accountId)).toBe(89);
  });

  it('20 concurrent charges over both instances against 5 left: exactly 5 succeed, the rest are key_credit_limit', async () => {
    const acct = await cappedKey(100, { creditLimit: 6 });
    expect((await lookup(b, acct.key)).status).toBe(200);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => lookup(i % 2 ? a : b, acct.key, `x${i}`)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    for (const r of results.filter((r) => r.status !== 200)) expect(r).toMatchObject({ status: 402, body: { code: 'key_credit_limit' } });
    expect(await left(acct.keyId)).toBe(0);
    expect(await balance(acct.accountId)).toBe(94);
  });
});

describe('the refill the gateway knows', () => {
  function creditsAt(clock: { now: Date }) {
    return new CreditService({
      accounts: new MongoAccountStore(a.connection),
      audit: new MongoAuditStore(a.connection),
      host: 'test',
      keyCredits: new MongoKeyCreditStore(a.connection),
      now: () => clock.now,
    });
  }
  const charge = (credits: CreditService, acct: TestAccount, creditRefill: KeyRefill | null) =>
    credits.charge(acct.accountId, 1, null, { service: 'definitions', source: acct.keyId }, { keyId: acct.keyId, creditLimit: 2, creditRefill }).then(
      () => 'ok',
      (err: { code?: string }) => err.code,
    );

  it('daily, known: reset at 00:00 UTC, not before; the pending entry names the period it took from', async () => {
    const acct = await cappedKey(100, { creditLimit: 2, refill: 'daily' });
    const clock = { now: new Date('2026-11-27T23:59:58Z') };
    const credits = creditsAt(clock);
    expect([await charge(credits, acct, 'daily'), await charge(credits, acct, 'daily'), await charge(credits, acct, 'daily')]).toEqual(['ok', 'ok', 'key_credit_limit']);
    clock.now = new Date('2026-11-28T00:00:00Z');
    expect(await charge(credits, acct, 'daily')).toBe('ok');
    // The next one is the usual case (credits left of today's period): its entry names today, as the
    // sweep and a release need it to.
    const store = new MongoKeyCreditStore(a.connection);
    expect(await store.reserve(acct.keyId, 'op-usual', 1, refillPeriodsAt(clock.now), clock.now, 'daily')).toEqual({ kind: 'reserved', period: '2026-11-28' });
    const stored = await storedKey(acct);
    expect(stored).toMatchObject({ creditsLeft: 0, refilledFor: '2026-11-28' });
    expect(stored!.pending.find((p: { op: string }) => p.op === 'op-usual')).toMatchObject({ amount: 1, period: '2026-11-28' });
    expect(await charge(credits, acct, 'daily')).toBe('key_credit_limit');
    await store.release(acct.keyId, { op: 'op-usual', amount: 1, period: '2026-11-28' });
    expect(await storedKey(acct)).toMatchObject({ creditsLeft: 1 });
    expect(await charge(credits, acct, 'daily')).toBe('ok');
  });

  it('stale (the key was made monthly since): the charge follows the stored key', async () => {
    const acct = await cappedKey(100, { creditLimit: 2, refill: 'monthly' });
    const clock = { now: new Date('2026-11-02T10:00:00Z') };
    const credits = creditsAt(clock);
    expect([await charge(credits, acct, 'daily'), await charge(credits, acct, 'daily')]).toEqual(['ok', 'ok']);
    // A new day is no new month: a cache that still says daily gets no refill from it.
    clock.now = new Date('2026-11-03T10:00:00Z');
    expect(await charge(credits, acct, 'daily')).toBe('key_credit_limit');
    expect(await charge(credits, acct, null)).toBe('key_credit_limit');
    clock.now = new Date('2026-12-01T00:00:01Z');
    expect([await charge(credits, acct, 'daily'), await charge(credits, acct, 'monthly'), await charge(credits, acct, 'monthly')]).toEqual(['ok', 'ok', 'key_credit_limit']);
    expect(await storedKey(acct)).toMatchObject({ creditsLeft: 0, refilledFor: '2026-12' });
  });

  it('a refund after a usual reservation goes back to the key, never past its limit', async () => {
    const acct = await cappedKey(10, { creditLimit: 3 });
    const credits = creditsAt({ now: new Date() });
    expect(await charge(credits, acct, null)).toBe('ok');
    expect(await charge(credits, acct, null)).toBe('ok');
    await credits.refund(acct.accountId, 1, null, { reason: 'test', keyId: acct.keyId });
    expect(await left(acct.keyId)).toBe(2);
    expect(await balance(acct.accountId)).toBe(9);
  });
});
