import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../src/domain/keys/format.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';

/**
 * Keys across gateway instances sharing one database: instance A and B watch the keys collection
 * with change streams (and cache keys); instance P has no change feed (polling only, no cache).
 */
let a: TestApp;
let b: TestApp;
let p: TestApp;
const actor = { actor: 'test', ip: '10.0.0.7', host: 'test-host' };

beforeAll(async () => {
  a = await startTestApp();
  b = await startTestApp();
  p = await startTestApp({ deps: { keyChanges: 'poll' } });
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close(), p?.close()]);
});

async function lookup(app: TestApp, key: string) {
  const res = await fetch(`${app.baseUrl}/api/playground/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ keyword: 'cat' }),
  });
  return { status: res.status, body: (await res.json()) as any };
}

/**
 * Makes A and B hold `key` in their caches, whatever the machine's speed. Each instance writes a used
 * key's lastUsedAt about a second after its first use (then at most once a minute), and every write to
 * api_keys evicts that key on every instance; so write those now, wait until both feeds have passed
 * them (a deletion made after them has reached A and B, in order), then look the key up again.
 */
async function cacheOnAAndB(key: string): Promise<void> {
  for (const app of [a, b, p]) await app.services.lastUsed.flush();
  const marker = await p.createAccountWithKey({ credits: 0 });
  const seen = { a: false, b: false };
  const offA = a.services.authenticator.onRevoked((id) => (seen.a ||= id === marker.keyId));
  const offB = b.services.authenticator.onRevoked((id) => (seen.b ||= id === marker.keyId));
  await p.services.keys.delete(marker.keyId, actor);
  await until(() => seen.a && seen.b, 'A and B hear a deletion made after the lastUsedAt writes');
  offA();
  offB();
  for (const app of [a, b]) expect((await lookup(app, key)).status).toBe(200);
}

describe('feeds', () => {
  it('instances on the embedded server use change streams; the poll instance does not', () => {
    expect(a.services.keyFeedState()).toBe('changestream');
    expect(b.services.keyFeedState()).toBe('changestream');
    expect(p.services.keyFeedState()).toBe('poll');
  });
});

describe('revocation', () => {
  it('a key deleted on one instance is refused by the next request on every instance, cached or not', async () => {
    const acc = await a.createAccountWithKey({ credits: 20 });
    for (const app of [a, b, p]) expect((await lookup(app, acc.key)).status).toBe(200);
    await cacheOnAAndB(acc.key);
    // A and B now hold the key in their caches; P never caches.
    expect(a.services.keyVerifier.cachedKeys).toBeGreaterThan(0);
    expect(b.services.keyVerifier.cachedKeys).toBeGreaterThan(0);
    expect(p.services.keyVerifier.cachedKeys).toBe(0);

    const revokedOnB: string[] = [];
    const off = b.services.authenticator.onRevoked((id) => revokedOnB.push(id));
    await a.services.keys.delete(acc.keyId, actor);
    // The deleting instance evicts at once; the others hear it from the database.
    expect((await lookup(a, acc.key)).status).toBe(401);
    expect((await lookup(p, acc.key)).status).toBe(401);
    await until(() => revokedOnB.includes(acc.keyId), 'B hears of the deletion');
    const onB = await lookup(b, acc.key);
    expect(onB.status).toBe(401);
    expect(onB.body.error).toBe('Invalid API key');
    off();
    expect(await a.services.authenticator.isActive(acc.keyId)).toBe(false);
  });

  it('the poll instance still announces deletions made elsewhere (for open WebSockets)', async () => {
    const acc = await a.createAccountWithKey({ credits: 1 });
    const seen: string[] = [];
    const off = p.services.authenticator.onRevoked((id) => seen.push(id));
    await b.services.keys.delete(acc.keyId, actor);
    await until(() => seen.includes(acc.keyId), 'the poll instance hears of the deletion');
    off();
  });

  it('every instance, the poll instance included, hears a key’s new grant after an edit made elsewhere (for open WebSockets)', async () => {
    const acc = await a.createAccountWithKey({ credits: 1 });
    const heard = new Map<TestApp, readonly string[]>();
    const offs = [a, b, p].map((app) =>
      app.services.authenticator.onGrantChanged((id, grant) => {
        if (id === acc.keyId) heard.set(app, grant.permissions);
      }),
    );
    await b.services.keys.update(acc.keyId, { permissions: ['lookup', 'generate'] }, actor);
    await until(() => [a, b, p].every((app) => heard.get(app)?.join() === 'lookup,generate'), 'every instance hears the new grant');
    for (const off of offs) off();
  });

  it('deleting twice is idempotent and audited once', async () => {
    const acc = await a.createAccountWithKey({ credits: 1 });
    const first = await a.services.keys.delete(acc.keyId, actor);
    const second = await b.services.keys.delete(acc.keyId, actor);
    expect(second.deletedAt.getTime()).toBe(first.deletedAt.getTime());
    const entries = [];
    for await (const e of a.services.audit.exportForAccount(acc.accountId)) entries.push(e);
    expect(entries.filter((e) => e.event === 'key.deleted')).toHaveLength(1);
  });
});

describe('keys at rest', () => {
  it('stores only the SHA-256 hash and a 12-character prefix', async () => {
    const created = await a.services.keys.create((await a.services.credits.createAccount('x', 0, actor)).id, 'ci', actor);
    expect(created.key).toMatch(/^wi_live_[0-9a-f]{64}$/);
    expect(created.prefix).toBe(created.key.slice(0, 12));
    const doc = await a.connection.db!.collection('api_keys').findOne({ prefix: created.prefix });
    expect(doc!.hash).toBe(hashKey(created.key));
    expect(JSON.stringify(doc)).not.toContain(created.key);
    const indexes = await a.connection.db!.collection('api_keys').indexes();
    expect(indexes.find((i) => i.key.hash === 1)?.unique).toBe(true);
  });

  it('lastUsedAt is written in the background, coalesced', async () => {
    const acc = await a.createAccountWithKey({ credits: 5 });
    const before = (await a.services.keys.list(acc.accountId))[0]!;
    expect(before.lastUsedAt).toBeNull();
    const t0 = Date.now();
    await lookup(a, acc.key);
    await lookup(a, acc.key);
    await a.services.lastUsed.flush();
    const after = (await a.services.keys.list(acc.accountId))[0]!;
    expect(after.lastUsedAt).toBeInstanceOf(Date);
    expect(after.lastUsedAt!.getTime()).toBeGreaterThanOrEqual(t0 - 5);
  });

  it('audit entries of key creation and deletion carry actor, IP, host, key id and prefix; TTL is 90 days', async () => {
    const account = await a.services.credits.createAccount('audited', 3, actor);
    const key = await a.services.keys.create(account.id, 'k', actor);
    await a.services.keys.delete(key.id, actor);
    await a.services.credits.grant(account.id, 5, 'grant:test-1', actor);
    await a.services.credits.grant(account.id, 5, 'grant:test-1', actor);
    const entries = [];
    for await (const e of a.services.audit.exportForAccount(account.id)) entries.push(e);
    expect(entries.map((e) => e.event)).toEqual(['account.created', 'key.created', 'key.deleted', 'credits.granted']);
    for (const e of entries.slice(1, 3)) {
      expect(e).toMatchObject({ accountId: account.id, actor: 'test', ip: '10.0.0.7', host: 'test-host', keyId: key.id, keyPrefix: key.prefix });
    }
    expect(entries[3]).toMatchObject({ amount: 5, opId: 'grant:test-1' });
    expect(await a.services.credits.balances([account.id])).toEqual([8]);
    const ttl = (await a.connection.db!.collection('audit_entries').indexes()).find((i) => i.key.createdAt === 1 && i.expireAfterSeconds !== undefined);
    expect(ttl?.expireAfterSeconds).toBe(90 * 24 * 3600);
  });
});
