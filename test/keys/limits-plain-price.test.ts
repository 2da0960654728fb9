import { Collection, ObjectId } from 'mongodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MongoAccountStore } from '../../src/data/accounts.js';
import { GroupCommit } from '../../src/data/group-commit.js';
import { MongoAuditStore } from '../../src/data/audit.js';
import { MongoKeyCreditStore } from '../../src/data/key-credits.js';
import { CreditService } from '../../src/domain/credits/service.js';
import type { KeyRefill } from '../../src/domain/keys/records.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from '../gateway/fakes.js';
import { until } from '../helpers/until.js';

/**
 * Limits at the price of a plain charge (issue 33): a capped key's usual charge writes nothing to the
 * key (its credits are on the account, taken in the account's one guarded update), concurrent charges
 * of one account are group-committed, and every rule of Key lifecycle still holds when the gateway
 * knows the key's refill (its cached key) and when what it knows is stale.
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

async function lookup(app: TestApp, key: string, keyword = 'cat', headers: Record<string, string> = {}) {
  const res = await fetch(`${app.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ keyword }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

const balance = async (accountId: string) => (await a.services.credits.getAccount(accountId))!.credits;
const left = async (keyId: string) => (await a.services.keys.get(keyId)).creditsLeft;
const storedKey = (acct: TestAccount) => a.connection.collection('api_keys').findOne({ prefix: acct.key.slice(0, 12) });
const storedAccount = (acct: TestAccount) => a.connection.collection('accounts').findOne({ _id: new ObjectId(acct.accountId) });

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

  it("concurrent reservations of one key on one instance go together: fewer writes to the key than lookups", async () => {
    const acct = await cappedKey(1000, { creditLimit: 500 });
    expect((await lookup(a, acct.key)).status).toBe(200);
    let writes = 0;
    const original = Collection.prototype.updateOne as (...args: unknown[]) => Promise<unknown>;
    vi.spyOn(Collection.prototype, 'updateOne').mockImplementation(function (this: Collection, ...args: unknown[]) {
      if (this.collectionName === 'api_keys') writes++;
      return original.apply(this, args) as never;
    });
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => lookup(a, acct.key, `r${i}`)));
    vi.restoreAllMocks();
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(writes).toBeLessThan(30);
    expect(await left(acct.keyId)).toBe(469);
    expect(await balance(acct.accountId)).toBe(969);
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
    const accounts = new MongoAccountStore(a.connection);
    return new CreditService({
      accounts,
      heldCredits: accounts,
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

  it("daily, known: reset at 00:00 UTC, not before; the key's credits on the account name the period they belong to", async () => {
    const acct = await cappedKey(100, { creditLimit: 2, refill: 'daily' });
    const clock = { now: new Date('2026-11-27T23:59:58Z') };
    const credits = creditsAt(clock);
    expect([await charge(credits, acct, 'daily'), await charge(credits, acct, 'daily'), await charge(credits, acct, 'daily')]).toEqual(['ok', 'ok', 'key_credit_limit']);
    clock.now = new Date('2026-11-28T00:00:00Z');
    expect(await charge(credits, acct, 'daily')).toBe('ok');
    // The day's credits moved onto the account (the key's document keeps none, and the period), one spent.
    expect(await storedKey(acct)).toMatchObject({ creditsLeft: 0, refilledFor: '2026-11-28' });
    expect((await storedAccount(acct))!.keyHeld[acct.keyId]).toEqual({ left: 1, period: '2026-11-28', limit: 2 });
    // A credit given back to the key's document (a refund made while the account held none) moves
    // with the next charge that needs it, never past the limit.
    const store = new MongoKeyCreditStore(a.connection);
    await store.refund(acct.keyId, null, 1);
    expect(await charge(credits, acct, 'daily')).toBe('ok');
    expect(await charge(credits, acct, 'daily')).toBe('ok');
    expect(await charge(credits, acct, 'daily')).toBe('key_credit_limit');
    expect(await balance(acct.accountId)).toBe(95);
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

/** Counts the writes to `accounts` while `run` runs; `hold` may hold one back or fail it. */
async function accountWrites<T>(run: () => Promise<T>, hold?: (call: number) => Promise<void>): Promise<{ result: T; writes: number }> {
  let writes = 0;
  const original = Collection.prototype.findOneAndUpdate as (...args: unknown[]) => Promise<unknown>;
  vi.spyOn(Collection.prototype, 'findOneAndUpdate').mockImplementation(async function (this: Collection, ...args: unknown[]) {
    if (this.collectionName === 'accounts') {
      const call = ++writes;
      await hold?.(call);
    }
    return original.apply(this, args) as never;
  });
  try {
    return { result: await run(), writes };
  } finally {
    vi.restoreAllMocks();
  }
}

/** Resolves once `n` charges have reached the accounts' group commit (one in flight, the rest waiting). */
function chargesSubmitted(n: number): Promise<void> {
  const original = GroupCommit.prototype.submit as (...args: unknown[]) => Promise<unknown>;
  let seen = 0;
  return new Promise((resolve) => {
    vi.spyOn(GroupCommit.prototype, 'submit').mockImplementation(function (this: GroupCommit<unknown, unknown>, ...args: unknown[]) {
      const answer = original.apply(this, args);
      if (++seen === n) resolve();
      return answer as never;
    });
  });
}

describe('group commit: concurrent charges of one account in fewer writes', () => {
  it('40 concurrent lookups on one instance: fewer writes than lookups, each answered with its own balance after it', async () => {
    const acct = await a.createAccountWithKey({ credits: 1000 });
    const { result, writes } = await accountWrites(() => Promise.all(Array.from({ length: 40 }, (_, i) => lookup(a, acct.key, `g${i}`))));
    expect(result.every((r) => r.status === 200)).toBe(true);
    expect(writes).toBeLessThan(40);
    // One at a time, the 40 charges would have left 999, 998, … 960: each answer has one of them, once.
    expect(result.map((r) => r.body.credits).sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => 960 + i));
    expect(await balance(acct.accountId)).toBe(960);
  });

  it('a batch that crosses zero over two instances: exactly the balance is charged, the rest are 402 insufficient_credits', async () => {
    const acct = await a.createAccountWithKey({ credits: 25 });
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => lookup(i % 2 ? a : b, acct.key, `z${i}`)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(25);
    for (const r of results.filter((r) => r.status !== 200)) expect(r).toMatchObject({ status: 402, body: { code: 'insufficient_credits', error: 'Insufficient credits' } });
    expect(ok.map((r) => r.body.credits).sort((x, y) => x - y)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(await balance(acct.accountId)).toBe(0);
  });

  it("a batch that crosses a key's limit and zero together, over two instances and two keys of one account", async () => {
    const acct = await a.createAccountWithKey({ credits: 15 });
    const capped = await a.services.keys.create(acct.accountId, 'capped', actor, { creditLimit: 10 });
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => lookup(i % 2 ? a : b, i % 4 < 2 ? capped.key : acct.key, `k${i}`)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(15);
    const cappedOk = results.filter((r, i) => r.status === 200 && i % 4 < 2).length;
    expect(cappedOk).toBeLessThanOrEqual(10);
    for (const [i, r] of results.entries()) {
      if (r.status === 200) continue;
      expect(r.status).toBe(402);
      expect(i % 4 < 2 ? ['key_credit_limit', 'insufficient_credits'] : ['insufficient_credits']).toContain(r.body.code);
    }
    expect(ok.map((r) => r.body.credits).sort((x, y) => x - y)).toEqual(Array.from({ length: 15 }, (_, i) => i));
    expect(await balance(acct.accountId)).toBe(0);
    await Promise.all([a.services.credits.confirmed(), b.services.credits.confirmed()]);
    expect((await a.services.keys.get(capped.id)).creditsLeft).toBe(10 - cappedOk);
  });

  it('Idempotency-Key: the same key sent twice at once is charged once and both get the same answer, in a batch with others', async () => {
    const acct = await a.createAccountWithKey({ credits: 100 });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i < 10 ? lookup(a, acct.key, `i${i % 5}`, { 'idempotency-key': `idem-${acct.keyId}-${i % 5}` }) : lookup(a, acct.key, `j${i}`))),
    );
    expect(results.slice(10).every((r) => r.status === 200)).toBe(true);
    // A second copy is a replay of the first's answer, or a 409 while the first is still running.
    for (const r of results.slice(0, 10)) expect([200, 409]).toContain(r.status);
    const kept = results.slice(0, 10).filter((r) => r.status === 200);
    for (const r of kept) expect(kept.filter((o) => o.body.keyword === r.body.keyword).every((o) => o.body.credits === r.body.credits)).toBe(true);
    // Five keys, each charged once, and ten lookups without one.
    expect(await balance(acct.accountId)).toBe(100 - 5 - 10);
    // A retry now replays each answer and charges nothing.
    for (let i = 0; i < 5; i++) expect((await lookup(b, acct.key, `i${i}`, { 'idempotency-key': `idem-${acct.keyId}-${i}` })).status).toBe(200);
    expect(await balance(acct.accountId)).toBe(85);
  });

  it('a database outage in the middle of a batch: the write in flight is answered, each waiting charge gets its 503 and none is charged', async () => {
    const acct = await a.createAccountWithKey({ credits: 50 });
    const queued = chargesSubmitted(10);
    const down = Object.assign(new Error('connection reset by peer'), { name: 'MongoNetworkError' });
    const { result } = await accountWrites(
      () => Promise.all(Array.from({ length: 10 }, (_, i) => lookup(a, acct.key, `o${i}`))),
      async (call) => {
        // The first write waits until the other nine wait for it; the one after it finds the database gone.
        if (call === 1) await queued;
        else throw down;
      },
    );
    expect(result.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of result.filter((r) => r.status !== 200)) expect(r).toMatchObject({ status: 503, body: { code: 'database_unavailable' } });
    expect(await balance(acct.accountId)).toBe(49);
  });
});

describe("the key's credits on its account", () => {
  /** A credit service whose move of a key's credits onto the account dies before or after the account's write. */
  function dyingMove(when: 'before' | 'after') {
    const accounts = new MongoAccountStore(a.connection);
    const dying = Object.create(accounts) as MongoAccountStore;
    dying.moveIn = async (...args) => {
      if (when === 'after') await accounts.moveIn(...args);
      throw new Error('process killed');
    };
    return new CreditService({ accounts, heldCredits: dying, audit: new MongoAuditStore(a.connection), host: 'dying', keyCredits: new MongoKeyCreditStore(a.connection) });
  }
  const chargeCapped = (credits: CreditService, acct: TestAccount, limit: number) =>
    credits.charge(acct.accountId, 1, null, { service: 'definitions', source: acct.keyId }, { keyId: acct.keyId, creditLimit: limit, creditRefill: null });
  // The sweep of a later time (every entry pending now is stale then), once the moves answered so far are confirmed.
  const sweepLater = async () => {
    await Promise.all([a.services.credits.confirmed(), b.services.credits.confirmed()]);
    return a.services.imageJobs.keys!.sweep(new Date(Date.now() + 120_000));
  };

  it('capped lookups over both instances: after the first, no write to the key and fewer writes to the account than lookups', async () => {
    const acct = await cappedKey(1000, { creditLimit: 500 });
    expect((await lookup(a, acct.key)).status).toBe(200);
    await Promise.all([a.services.credits.confirmed(), b.services.credits.confirmed()]);
    const writes = { api_keys: 0, accounts: 0 };
    for (const method of ['findOneAndUpdate', 'updateOne', 'bulkWrite'] as const) {
      const original = Collection.prototype[method] as (...args: unknown[]) => unknown;
      vi.spyOn(Collection.prototype, method).mockImplementation(function (this: Collection, ...args: unknown[]) {
        // On api_keys, the writes of its credits (not the last-used times flushed on a timer).
        if (this.collectionName === 'accounts' || (this.collectionName === 'api_keys' && /creditsLeft|pending/.test(JSON.stringify(args)))) writes[this.collectionName]++;
        return original.apply(this, args) as never;
      });
    }
    const result = await Promise.all(Array.from({ length: 40 }, (_, i) => lookup(i % 2 ? a : b, acct.key, `h${i}`)));
    vi.restoreAllMocks();
    expect(result.every((r) => r.status === 200)).toBe(true);
    expect(writes.api_keys).toBe(0);
    expect(writes.accounts).toBeLessThan(40);
    expect(await left(acct.keyId)).toBe(459);
    expect(await balance(acct.accountId)).toBe(959);
  });

  it("a fresh key's first charges at once over both instances: one moves its credits, the others wait for them, none is refused", async () => {
    const acct = await cappedKey(100, { creditLimit: 24 });
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => lookup(i % 2 ? a : b, acct.key, `f${i}`)));
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 24 }, () => 200));
    expect((await lookup(a, acct.key, 'f-over')).body).toMatchObject({ code: 'key_credit_limit' });
    expect(await left(acct.keyId)).toBe(0);
    expect(await balance(acct.accountId)).toBe(76);
  });

  it("a key as the previous release left it (credits left on the key, a dead process's reservation pending): charged from what it has, the sweep settles the rest", async () => {
    const acct = await cappedKey(100, { creditLimit: 10 });
    // 4 spent under the previous release, 2 of them reserved by a process that died before the account's charge.
    await a.connection.collection('api_keys').updateOne(
      { prefix: acct.key.slice(0, 12) },
      { $set: { creditsLeft: 6, refilledFor: null, pending: [{ op: 'keycharge:old-release', amount: 2, at: new Date(Date.now() - 120_000), period: null }] } },
    );
    expect(await left(acct.keyId)).toBe(6);
    const first = await Promise.all(Array.from({ length: 8 }, (_, i) => lookup(i % 2 ? a : b, acct.key, `u${i}`)));
    expect(first.filter((r) => r.status === 200)).toHaveLength(6);
    for (const r of first.filter((r) => r.status !== 200)) expect(r.body).toMatchObject({ code: 'key_credit_limit' });
    expect(await sweepLater()).toMatchObject({ released: 1 });
    expect(await left(acct.keyId)).toBe(2);
    expect((await Promise.all([lookup(a, acct.key, 'u8'), lookup(b, acct.key, 'u9'), lookup(a, acct.key, 'u10')])).map((r) => r.status).sort()).toEqual([200, 200, 402]);
    expect(await balance(acct.accountId)).toBe(92);
  });

  it('a move that dies after the reservation on the key: nothing is charged, and the sweep gives the key its credits back', async () => {
    const acct = await cappedKey(10, { creditLimit: 5 });
    await expect(chargeCapped(dyingMove('before'), acct, 5)).rejects.toThrow('process killed');
    expect(await balance(acct.accountId)).toBe(10);
    expect(await sweepLater()).toMatchObject({ released: 1 });
    expect(await left(acct.keyId)).toBe(5);
    expect(await storedKey(acct)).toMatchObject({ creditsLeft: 5, pending: [] });
    expect(await chargeCapped(a.services.credits, acct, 5)).toBe(9);
    expect(await left(acct.keyId)).toBe(4);
  });

  it('a move that dies after the account took the credits: the sweep keeps them there, and the key spends exactly its limit', async () => {
    const acct = await cappedKey(10, { creditLimit: 5 });
    await expect(chargeCapped(dyingMove('after'), acct, 5)).rejects.toThrow('process killed');
    expect(await sweepLater()).toMatchObject({ confirmed: 1 });
    expect(await storedKey(acct)).toMatchObject({ creditsLeft: 0, pending: [] });
    expect(await left(acct.keyId)).toBe(5);
    const answers = await Promise.all(Array.from({ length: 8 }, () => chargeCapped(a.services.credits, acct, 5).then(String, (err: { code?: string }) => err.code)));
    expect(answers.filter((x) => x === 'key_credit_limit')).toHaveLength(3);
    expect(await balance(acct.accountId)).toBe(5);
    expect(await sweepLater()).toMatchObject({ released: 0, confirmed: 0 });
  });

  it('refunds go back to the credits on the account, once per op, never past the limit', async () => {
    const acct = await cappedKey(20, { creditLimit: 3 });
    const credits = a.services.credits;
    expect([await chargeCapped(credits, acct, 3), await chargeCapped(credits, acct, 3)]).toEqual([19, 18]);
    await credits.refund(acct.accountId, 1, 'refund-1', { reason: 'test', keyId: acct.keyId });
    await credits.refund(acct.accountId, 1, 'refund-1', { reason: 'test', keyId: acct.keyId });
    expect(await left(acct.keyId)).toBe(2);
    await credits.refund(acct.accountId, 1, 'refund-2', { reason: 'test', keyId: acct.keyId });
    await credits.refund(acct.accountId, 1, null, { reason: 'test', keyId: acct.keyId });
    expect(await left(acct.keyId)).toBe(3);
    expect((await storedAccount(acct))!.keyHeld[acct.keyId]).toMatchObject({ left: 3, limit: 3 });
    expect(await balance(acct.accountId)).toBe(21);
  });

  it('a new limit folds the credits on the account back into the key: what is left moves by the difference', async () => {
    const acct = await cappedKey(100, { creditLimit: 10 });
    for (let i = 0; i < 3; i++) expect((await lookup(i % 2 ? a : b, acct.key, `n${i}`)).status).toBe(200);
    expect(await left(acct.keyId)).toBe(7);
    expect(await a.services.keys.update(acct.keyId, { creditLimit: 5 }, actor)).toMatchObject({ creditLimit: 5, creditsLeft: 2 });
    expect((await storedAccount(acct))!.keyHeld?.[acct.keyId]).toBeUndefined();
    expect(await storedKey(acct)).toMatchObject({ creditLimit: 5, creditsLeft: 2 });
    await until(async () => (await lookup(a, acct.key, 'n-new')).status === 402, 'the gateways see the new limit');
    expect(await left(acct.keyId)).toBe(0);
    expect(await b.services.keys.update(acct.keyId, { creditLimit: 8 }, actor)).toMatchObject({ creditLimit: 8, creditsLeft: 3 });
    expect(await balance(acct.accountId)).toBe(100 - 3 - (5 - 3));
  });
});

describe('client token budget', () => {
  const APP = 'http://127.0.0.1:5173';
  const gql = (app: TestApp, token: string, i: number) =>
    fetch(`${app.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, origin: APP, 'content-type': 'application/json' },
      body: JSON.stringify({ query: `mutation { lookup(keyword: "t${i}") { credits } }` }),
    }).then((r) => r.json() as Promise<any>);
  const mint = async (accountId: string, keyId: string, maxCredits: number) =>
    (await a.services.clientTokens.mint({ accountId, keyId }, { origins: [APP], maxCredits }, actor)).token;

  it('20 concurrent GraphQL lookups over two instances against maxCredits 7: exactly 7 run, 13 are token_credit_limit', async () => {
    const acct = await a.createAccountWithKey({ credits: 100 });
    const token = await mint(acct.accountId, acct.keyId, 7);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => gql(i % 2 ? a : b, token, i)));
    const ok = results.filter((r) => r.data?.lookup);
    expect(ok).toHaveLength(7);
    for (const r of results.filter((r) => !r.data?.lookup)) {
      expect(r.errors[0]).toMatchObject({ message: 'Client token credit limit reached', extensions: { code: 'INSUFFICIENT_CREDITS', reason: 'token_credit_limit' } });
    }
    expect(ok.map((r) => r.data.lookup.credits).sort((x: number, y: number) => x - y)).toEqual([93, 94, 95, 96, 97, 98, 99]);
    expect(await balance(acct.accountId)).toBe(93);
    expect((await a.connection.collection('client_tokens').findOne({ accountId: new ObjectId(acct.accountId) }))?.spent).toBe(7);
  });

  it("concurrent reservations of one token's budget go together: fewer writes than lookups", async () => {
    const acct = await a.createAccountWithKey({ credits: 100 });
    const token = await mint(acct.accountId, acct.keyId, 50);
    let writes = 0;
    const original = Collection.prototype.updateOne as (...args: unknown[]) => Promise<unknown>;
    vi.spyOn(Collection.prototype, 'updateOne').mockImplementation(function (this: Collection, ...args: unknown[]) {
      if (this.collectionName === 'client_tokens') writes++;
      return original.apply(this, args) as never;
    });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => gql(a, token, i)));
    vi.restoreAllMocks();
    expect(results.every((r) => r.data?.lookup)).toBe(true);
    expect(writes).toBeLessThan(20);
    expect((await a.connection.collection('client_tokens').findOne({ accountId: new ObjectId(acct.accountId) }))?.spent).toBe(20);
  });
});
