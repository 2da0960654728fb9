import { ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoAccountStore } from '../../src/data/accounts.js';
import { MongoAuditStore } from '../../src/data/audit.js';
import { MongoKeyCreditStore } from '../../src/data/key-credits.js';
import type { AccountStore } from '../../src/domain/credits/records.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { ProviderError, type ImageProvider } from '../../src/providers/images/types.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { ScriptedProvider } from '../gateway/fakes.js';

/**
 * A key's credit limit across two gateway instances on one database: exact under concurrency, given
 * back by refunds, reset by its refill at the UTC boundary, settled by the sweep after a crash.
 */
class RejectingImages implements ImageProvider {
  readonly name = 'scripted';
  readonly offer = BUILTIN_OFFER;
  async generate(prompt: string) {
    if (prompt.startsWith('reject')) throw new ProviderError('provider_rejected', 'rejected on purpose');
    return { data: Buffer.from(`png:${prompt}`), contentType: 'image/png' };
  }
}

const APP = 'http://127.0.0.1:5173';
const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
const provider = new ScriptedProvider();
let a: TestApp;
let b: TestApp;
let worker: RunningWorker | undefined;

beforeAll(async () => {
  a = await startTestApp({ deps: { definitionProvider: provider, imageProvider: new RejectingImages() } });
  b = await startTestApp({ deps: { definitionProvider: provider, imageProvider: new RejectingImages() } });
  worker = await startConfiguredImageWorker(a.config, a.services.imageJobs, { info() {}, warn() {}, error() {} });
});
afterAll(async () => {
  await worker?.stop();
  await Promise.all([a?.close(), b?.close()]);
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

describe('the limit', () => {
  it('20 concurrent charges against a limit of 5 over both instances: exactly 5 succeed, the account pays exactly 5', async () => {
    const acct = await cappedKey(100, { creditLimit: 5 });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => lookup(i % 2 ? a : b, acct.key)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 402);
    expect(ok).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const r of refused) expect(r.body).toMatchObject({ error: 'Key credit limit reached', code: 'key_credit_limit' });
    expect(await balance(acct.accountId)).toBe(95);
    expect(await left(acct.keyId)).toBe(0);
    // The reservations are confirmed after the answers, in the background: none stays pending.
    await Promise.all([a.services.credits.confirmed(), b.services.credits.confirmed()]);
    expect((await a.connection.collection('api_keys').findOne({ prefix: acct.key.slice(0, 12) }))?.pending ?? []).toEqual([]);
    // And the account forgot every one-shot op id once its key's entry was gone.
    expect((await a.connection.collection('accounts').findOne({ _id: new ObjectId(acct.accountId) }))?.ops ?? []).toEqual([]);
  });

  it('a charge needs the balance too: an account short of credits is 402 insufficient_credits and the key keeps its credits', async () => {
    const acct = await cappedKey(1, { creditLimit: 10 });
    expect((await lookup(a, acct.key)).status).toBe(200);
    expect(await lookup(b, acct.key)).toMatchObject({ status: 402, body: { code: 'insufficient_credits' } });
    expect(await left(acct.keyId)).toBe(9);
    expect(await balance(acct.accountId)).toBe(0);
  });

  it('over GraphQL it is INSUFFICIENT_CREDITS with reason key_credit_limit, and a client token of the key is held by it too', async () => {
    const acct = await cappedKey(100, { creditLimit: 2 });
    const minted = await fetch(`${a.baseUrl}/api/client-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ origins: [APP], maxCredits: 10 }),
    }).then((r) => r.json() as Promise<any>);
    const gql = (app: TestApp) =>
      fetch(`${app.baseUrl}/graphql`, {
        method: 'POST',
        headers: { authorization: `Bearer ${minted.token}`, origin: APP, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'mutation { lookup(keyword: "owl") { credits } }' }),
      }).then((r) => r.json() as Promise<any>);
    expect((await gql(a)).data.lookup.credits).toBe(99);
    expect((await gql(b)).data.lookup.credits).toBe(98);
    const third = await gql(a);
    expect(third.errors[0]).toMatchObject({ message: 'Key credit limit reached', extensions: { code: 'INSUFFICIENT_CREDITS', reason: 'key_credit_limit' } });
    expect(await balance(acct.accountId)).toBe(98);
  });
});

describe('refunds', () => {
  it('a failed lookup gives the credit back to the key as well as to the account', async () => {
    const acct = await cappedKey(10, { creditLimit: 3 });
    provider.mode = 'failed';
    try {
      expect((await lookup(a, acct.key, 'refunded')).status).toBe(502);
    } finally {
      provider.mode = 'ok';
    }
    expect(await left(acct.keyId)).toBe(3);
    expect(await balance(acct.accountId)).toBe(10);
  });

  it('failed images give their credits back to the key (once each)', async () => {
    const acct = await cappedKey(10, { creditLimit: 4 });
    const res = await fetch(`${b.baseUrl}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompts: ['reject one', 'a calm lake', 'reject two'] }),
    });
    expect(res.status).toBeLessThan(300);
    const { jobId } = (await res.json()) as any;
    await until(async () => (await a.services.jobs.get({ accountId: acct.accountId, keyId: acct.keyId }, jobId, { baseUrl: a.baseUrl })).completedAt !== null, 'the job ends');
    await until(async () => (await left(acct.keyId)) === 3, 'two refunds reach the key');
    expect(await balance(acct.accountId)).toBe(9);
  });
});

describe('a crash between the key and the account', () => {
  /** The credit service of a process that dies at the account's charge: before it applies, or after. */
  function dyingCredits(when: 'before' | 'after') {
    const accounts = new MongoAccountStore(a.connection);
    const dying: AccountStore = Object.create(accounts) as AccountStore;
    dying.apply = async (...args) => {
      if (when === 'after') await accounts.apply(...args);
      throw new Error('process killed');
    };
    return new CreditService({ accounts: dying, audit: new MongoAuditStore(a.connection), host: 'dying', keyCredits: new MongoKeyCreditStore(a.connection) });
  }
  const sweepLater = () => a.services.imageJobs.keys!.sweep(new Date(Date.now() + 120_000));

  it('before the account charge: the sweep gives the key its credits back, the account never pays', async () => {
    const acct = await cappedKey(10, { creditLimit: 5 });
    await expect(dyingCredits('before').charge(acct.accountId, 2, null, { service: 'definitions', source: acct.keyId }, { keyId: acct.keyId, creditLimit: 5 })).rejects.toThrow('process killed');
    expect(await left(acct.keyId)).toBe(3);
    expect(await a.services.imageJobs.keys!.sweep()).toMatchObject({ released: 0, confirmed: 0 });
    expect(await sweepLater()).toMatchObject({ released: 1 });
    expect(await left(acct.keyId)).toBe(5);
    expect(await balance(acct.accountId)).toBe(10);
    // Settled once: the next sweep finds nothing.
    expect(await sweepLater()).toMatchObject({ released: 0, confirmed: 0 });
    expect(await left(acct.keyId)).toBe(5);
  });

  it('after the account charge: the sweep keeps the credits spent on both, and the charge can never apply twice', async () => {
    const acct = await cappedKey(10, { creditLimit: 5 });
    await expect(dyingCredits('after').charge(acct.accountId, 2, null, { service: 'definitions', source: acct.keyId }, { keyId: acct.keyId, creditLimit: 5 })).rejects.toThrow('process killed');
    expect(await sweepLater()).toMatchObject({ confirmed: 1 });
    expect(await left(acct.keyId)).toBe(3);
    expect(await balance(acct.accountId)).toBe(8);
    expect(await sweepLater()).toMatchObject({ released: 0, confirmed: 0 });
  });
});

describe('refill', () => {
  /** A credit service whose clock the test sets. */
  function creditsAt(clock: { now: Date }) {
    return new CreditService({
      accounts: new MongoAccountStore(a.connection),
      audit: new MongoAuditStore(a.connection),
      host: 'test',
      keyCredits: new MongoKeyCreditStore(a.connection),
      now: () => clock.now,
    });
  }
  const charge = (credits: CreditService, acct: TestAccount) =>
    credits.charge(acct.accountId, 1, null, { service: 'definitions', source: acct.keyId }, { keyId: acct.keyId, creditLimit: 2 }).then(
      () => 'ok',
      (err: { code?: string }) => err.code,
    );

  it('daily: credits left are set back to the limit at 00:00 UTC (a reset, not an addition), at the next charge', async () => {
    const acct = await cappedKey(100, { creditLimit: 2, refill: 'daily' });
    const clock = { now: new Date('2026-11-27T23:59:58Z') };
    const credits = creditsAt(clock);
    expect([await charge(credits, acct), await charge(credits, acct), await charge(credits, acct)]).toEqual(['ok', 'ok', 'key_credit_limit']);
    clock.now = new Date('2026-11-27T23:59:59.999Z');
    expect(await charge(credits, acct)).toBe('key_credit_limit');
    clock.now = new Date('2026-11-28T00:00:00Z');
    expect(await charge(credits, acct)).toBe('ok');
    const stored = await a.connection.collection('api_keys').findOne({ prefix: acct.key.slice(0, 12) });
    expect(stored).toMatchObject({ creditsLeft: 1, refilledFor: '2026-11-28' });
  });

  it('monthly: on the 1st, not before', async () => {
    const acct = await cappedKey(100, { creditLimit: 2, refill: 'monthly' });
    const clock = { now: new Date('2026-11-02T10:00:00Z') };
    const credits = creditsAt(clock);
    expect([await charge(credits, acct), await charge(credits, acct)]).toEqual(['ok', 'ok']);
    clock.now = new Date('2026-11-30T23:59:59Z');
    expect(await charge(credits, acct)).toBe('key_credit_limit');
    clock.now = new Date('2026-12-01T00:00:01Z');
    expect([await charge(credits, acct), await charge(credits, acct), await charge(credits, acct)]).toEqual(['ok', 'ok', 'key_credit_limit']);
  });
});
