import { describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/domain/errors.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { LayeredDefinitionCache } from '../../src/domain/definitions/cache.js';
import { DefinitionLookup } from '../../src/domain/definitions/service.js';
import { parseKeyword } from '../../src/domain/definitions/validation.js';
import { parseBearer } from '../../src/domain/keys/format.js';
import { createKeyServices } from '../../src/domain/keys/index.js';
import { ScriptedProvider } from './fakes.js';
import { ManualKeyFeed, MemoryAccountStore, MemoryAuditStore, MemoryKeyStore, MemoryRateLimitCounter } from './memory-fakes.js';

const actor = { actor: 'test', ip: '1.2.3.4', host: 'h' };

function credits() {
  const accounts = new MemoryAccountStore();
  const audit = new MemoryAuditStore();
  return { accounts, audit, service: new CreditService({ accounts, audit, host: 'h' }) };
}

async function code(p: Promise<unknown>): Promise<string | undefined> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  return err instanceof AppError ? err.code : err === undefined ? undefined : `not an AppError: ${String(err)}`;
}

describe('CreditService', () => {
  it('charges once per operation id and never below zero', async () => {
    const { service } = credits();
    const acc = await service.createAccount('a', 3, actor);
    expect(await service.charge(acc.id, 2, 'op1')).toBe(1);
    expect(await service.charge(acc.id, 2, 'op1')).toBe(1); // a retry: not charged again
    expect(await code(service.charge(acc.id, 2, 'op2'))).toBe('insufficient_credits');
    expect(await service.balances([acc.id])).toEqual([1]);
  });

  it('refunds once per operation id, audited once', async () => {
    const { service, audit } = credits();
    const acc = await service.createAccount('a', 1, actor);
    await service.charge(acc.id, 1, 'job:1');
    await service.refund(acc.id, 1, 'refund:job:1:0', { reason: 'image_failed', keyId: 'k' });
    await service.refund(acc.id, 1, 'refund:job:1:0', { reason: 'image_failed', keyId: 'k' });
    expect(await service.balances([acc.id])).toEqual([1]);
    expect(audit.entries.filter((e) => e.event === 'credits.refunded')).toHaveLength(1);
  });

  it('a voided operation can never apply later; an applied one reports so', async () => {
    const { service } = credits();
    const acc = await service.createAccount('a', 5, actor);
    expect(await service.voidOp(acc.id, 'job:x')).toBe('voided');
    // The request the sweep judged dead hears that nothing was taken.
    expect(await code(service.charge(acc.id, 2, 'job:x'))).toBe('database_unavailable');
    expect(await service.voidOp(acc.id, 'job:x')).toBe('voided');
    await service.charge(acc.id, 2, 'job:y');
    expect(await service.voidOp(acc.id, 'job:y')).toBe('already_applied');
    expect(await service.balances([acc.id])).toEqual([3]);
  });

  it('validates grants and new accounts, naming the field', async () => {
    const { service } = credits();
    const acc = await service.createAccount('a', 0, actor);
    for (const bad of [0, -1, 1.5, '3', Number.NaN]) expect(await code(service.grant(acc.id, bad, `g${bad}`, actor))).toBe('invalid_request');
    expect(await code(service.grant('0'.repeat(24), 1, 'g', actor))).toBe('invalid_request');
    expect(await code(service.createAccount('', 1, actor))).toBe('invalid_request');
    expect(await code(service.createAccount('x', -1, actor))).toBe('invalid_request');
    expect(await service.grant(acc.id, 4, 'g-ok', actor)).toBe(4);
  });

  it('a charge of a vanished account is an invalid key, not a 500', async () => {
    const { service } = credits();
    expect(await code(service.charge('f'.repeat(24), 1, 'op'))).toBe('invalid_api_key');
  });
});

describe('key services', () => {
  async function setup(feed?: ManualKeyFeed, extra: { rateLimitPerMinute?: number; lastUsedIntervalMs?: number } = {}) {
    const accounts = new MemoryAccountStore();
    const keys = new MemoryKeyStore();
    const audit = new MemoryAuditStore();
    const k = createKeyServices({ keys, accounts, audit, changes: feed, rateLimits: new MemoryRateLimitCounter(), ...extra });
    const acc = await accounts.create('a', 10, new Date());
    const created = await k.manager.create(acc.id, 'k', actor);
    return { keys, audit, k, acc, created, header: `Bearer ${created.key}` };
  }

  it('the contract 401s, in order', async () => {
    const { k } = await setup();
    expect(await code(k.authenticator.authenticate(undefined))).toBe('missing_authorization');
    expect(await code(k.authenticator.authenticate('Token abc'))).toBe('missing_authorization');
    expect(await code(k.authenticator.authenticate('Bearer abc'))).toBe('invalid_api_key_format');
    expect(await code(k.authenticator.authenticate(`Bearer wi_live_${'0'.repeat(64)}`))).toBe('invalid_api_key');
  });

  it('parses Bearer headers strictly', () => {
    const key = `wi_live_${'ab'.repeat(32)}`;
    expect(parseBearer(`Bearer ${key}`)).toEqual({ ok: true, key });
    expect(parseBearer(`bearer ${key}`)).toEqual({ ok: true, key });
    expect(parseBearer(`Bearer ${key} x`)).toEqual({ ok: false, reason: 'missing_authorization' });
    expect(parseBearer(`Bearer\t${key}`)).toEqual({ ok: false, reason: 'missing_authorization' });
  });

  it('without a feed, every request reads the database (no cache)', async () => {
    const { k, keys, header } = await setup();
    await k.authenticator.authenticate(header);
    await k.authenticator.authenticate(header);
    expect(keys.reads).toBe(2);
    expect(k.verifier.cachedKeys).toBe(0);
  });

  it('with a live feed, caches; any change event evicts; a deletion is announced', async () => {
    const feed = new ManualKeyFeed();
    const { k, keys, header, created } = await setup(feed);
    const revoked: string[] = [];
    k.authenticator.onRevoked((id) => revoked.push(id));
    await k.authenticator.authenticate(header);
    await k.authenticator.authenticate(header);
    expect(keys.reads).toBe(1);
    feed.change(created.id, false);
    await k.authenticator.authenticate(header);
    expect(keys.reads).toBe(2);
    keys.keys.get(created.id)!.deletedAt = new Date();
    feed.change(created.id, true);
    expect(revoked).toEqual([created.id]);
    expect(await code(k.authenticator.authenticate(header))).toBe('invalid_api_key');
  });

  it('a cached key answers without a promise of its own, as one frozen principal every request shares', async () => {
    const feed = new ManualKeyFeed();
    const { k, header, created, acc } = await setup(feed);
    const first = await k.authenticator.authenticateWithLimit(header);
    const now = k.verifier.verify(header);
    expect(now).not.toBeInstanceOf(Promise);
    expect(now).toEqual({ ok: true, principal: first.principal });
    const second = await k.authenticator.authenticateWithLimit(header);
    expect(second.principal).toBe(first.principal);
    expect(second.principal).toMatchObject({ accountId: acc.id, keyId: created.id });
    expect(Object.isFrozen(second.principal)).toBe(true);
    // Refusals still come as rejections, never as a throw from the call itself.
    const refused = k.authenticator.authenticateWithLimit('Bearer abc');
    expect(await code(refused)).toBe('invalid_api_key_format');
  });

  it('losing the feed drops the cache and stops caching', async () => {
    const feed = new ManualKeyFeed();
    const { k, keys, header } = await setup(feed);
    await k.authenticator.authenticate(header);
    expect(k.verifier.cachedKeys).toBe(1);
    feed.lose();
    expect(k.verifier.cachedKeys).toBe(0);
    await k.authenticator.authenticate(header);
    await k.authenticator.authenticate(header);
    expect(keys.reads).toBe(3);
    expect(k.verifier.cachedKeys).toBe(0);
  });

  it('a read overtaken by a change event is not cached', async () => {
    const feed = new ManualKeyFeed();
    const { k, keys, header, created } = await setup(feed);
    keys.duringRead = () => {
      keys.keys.get(created.id)!.deletedAt = new Date();
      feed.change(created.id, true);
      keys.duringRead = undefined;
    };
    await k.authenticator.authenticate(header); // read the key as active, but it was deleted meanwhile
    expect(k.verifier.cachedKeys).toBe(0);
    expect(await code(k.authenticator.authenticate(header))).toBe('invalid_api_key');
  });

  it('a local delete evicts at once, even while the feed is slow', async () => {
    const feed = new ManualKeyFeed();
    const { k, header, created, audit } = await setup(feed);
    await k.authenticator.authenticate(header);
    await k.manager.delete(created.id, actor);
    expect(await code(k.authenticator.authenticate(header))).toBe('invalid_api_key');
    expect(audit.entries.map((e) => e.event)).toEqual(['key.created', 'key.deleted']);
    expect(audit.entries[1]).toMatchObject({ keyId: created.id, keyPrefix: created.key.slice(0, 12), ip: '1.2.3.4' });
  });

  it('coalesces lastUsedAt: many uses, one write per interval, none on the request path', async () => {
    vi.useFakeTimers();
    try {
      const { k, keys, header } = await setup(undefined, { lastUsedIntervalMs: 60_000 });
      for (let i = 0; i < 50; i++) await k.authenticator.authenticate(header);
      expect(keys.useWrites).toHaveLength(0);
      await vi.advanceTimersByTimeAsync(1100);
      expect(keys.useWrites).toHaveLength(1);
      for (let i = 0; i < 50; i++) await k.authenticator.authenticate(header);
      await vi.advanceTimersByTimeAsync(30_000);
      expect(keys.useWrites).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(31_000);
      expect(keys.useWrites).toHaveLength(2);
      await k.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it('rate limits per key when configured', async () => {
    const { k, header } = await setup(undefined, { rateLimitPerMinute: 2 });
    await k.authenticator.authenticate(header);
    await k.authenticator.authenticate(header);
    const err = await k.authenticator.authenticate(header).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('rate_limited');
    expect((err as AppError).retryAfter).toBeGreaterThan(0);
  });

  it('validates creation input', async () => {
    const { k, acc } = await setup();
    expect(await code(k.manager.create('nope', 'k', actor))).toBe('invalid_request');
    expect(await code(k.manager.create(acc.id, '  ', actor))).toBe('invalid_request');
    expect(await code(k.manager.create(acc.id, 'x'.repeat(101), actor))).toBe('invalid_request');
    expect(await code(k.manager.delete('zz', actor))).toBe('invalid_request');
  });
});

describe('DefinitionLookup', () => {
  async function setup(ttlMs = 60_000) {
    const c = credits();
    const provider = new ScriptedProvider();
    let now = 0;
    const cache = new LayeredDefinitionCache({ ttlMs, maxEntries: 2, now: () => now });
    const lookup = new DefinitionLookup({ credits: c.service, provider, cache, maxKeywordLength: 100 });
    const acc = await c.service.createAccount('a', 3, actor);
    const principal = { accountId: acc.id, keyId: 'k'.repeat(24) };
    return { ...c, provider, lookup, principal, acc, advance: (ms: number) => (now += ms) };
  }

  it('charges one credit and returns the trimmed keyword; the account records no operation id', async () => {
    const { lookup, principal, accounts, acc } = await setup();
    expect(await lookup.lookup(principal, ' cat ')).toEqual({ keyword: 'cat', definition: 'definition of cat', credits: 2 });
    expect(accounts.accounts.get(acc.id)!.ops).toEqual([]);
  });

  it('validation comes before the charge', async () => {
    const { lookup, principal, accounts } = await setup();
    expect(await code(lookup.lookup(principal, 5))).toBe('invalid_request');
    expect(accounts.applyCalls).toBe(0);
  });

  it.each([
    ['unavailable', 'provider_unavailable'],
    ['failed', 'provider_failed'],
    ['crash', 'provider_failed'],
  ] as const)('a provider that is %s → %s, refunded once, audited', async (mode, expected) => {
    const { lookup, principal, provider, service, audit, acc, accounts } = await setup();
    provider.mode = mode;
    expect(await code(lookup.lookup(principal, 'cat'))).toBe(expected);
    expect(await service.balances([acc.id])).toEqual([3]);
    expect(audit.entries.filter((e) => e.event === 'credits.refunded')).toHaveLength(1);
    expect(accounts.accounts.get(acc.id)!.ops).toEqual([]);
  });

  it('no definition: a clear text, charged', async () => {
    const { lookup, principal, provider } = await setup();
    provider.mode = 'none';
    expect(await lookup.lookup(principal, 'qzx')).toEqual({ keyword: 'qzx', definition: 'No definition found for "qzx".', credits: 2 });
  });

  it('caches per keyword until the TTL; the charge still applies', async () => {
    const { lookup, principal, provider, advance } = await setup(1000);
    await lookup.lookup(principal, 'cat');
    const again = await lookup.lookup(principal, 'cat');
    expect(provider.calls).toEqual(['cat']);
    expect(again.credits).toBe(1);
    advance(1001);
    await lookup.lookup(principal, 'cat');
    expect(provider.calls).toEqual(['cat', 'cat']);
  });

  it('a memory hit answers without the provider; a cache whose memory read throws is reported and skipped, charged once', async () => {
    const { lookup, principal, provider, service, acc } = await setup();
    await lookup.lookup(principal, 'cat');
    expect(await lookup.lookup(principal, ' cat')).toEqual({ keyword: 'cat', definition: 'definition of cat', credits: 1 });
    expect(provider.calls).toEqual(['cat']);

    const errors: unknown[] = [];
    const broken = new LayeredDefinitionCache({ ttlMs: 60_000, maxEntries: 2 });
    broken.peek = () => {
      throw new Error('memory gone');
    };
    const c = credits();
    const account = await c.service.createAccount('b', 2, actor);
    const other = new DefinitionLookup({ credits: c.service, provider, cache: broken, maxKeywordLength: 100, onCacheError: (e) => errors.push(e) });
    expect(await other.lookup({ accountId: account.id, keyId: 'k'.repeat(24) }, 'dog')).toEqual({ keyword: 'dog', definition: 'definition of dog', credits: 1 });
    // Reported by the memory read, and again by the cache's get (which reads memory first).
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => (e as Error).message === 'memory gone')).toBe(true);
    expect(await c.service.balances([account.id])).toEqual([1]);
    expect(await service.balances([acc.id])).toEqual([1]);
  });

  it('the memory cache is bounded (least recently used goes first)', async () => {
    const cache = new LayeredDefinitionCache({ ttlMs: 60_000, maxEntries: 2 });
    await cache.set('p', 'a', 'A');
    await cache.set('p', 'b', 'B');
    await cache.get('p', 'a');
    await cache.set('p', 'c', 'C');
    expect(cache.size).toBe(2);
    expect(await cache.get('p', 'b')).toBeNull();
    expect(await cache.get('p', 'a')).toBe('A');
  });

  it('a hit moves an entry only once a quarter of the cache has passed it; a hot entry outlives the churn', async () => {
    const cache = new LayeredDefinitionCache({ ttlMs: 60_000, maxEntries: 8 });
    await cache.set('p', 'hot', 'H');
    for (let i = 0; i < 40; i++) {
      await cache.set('p', `cold${i}`, 'C');
      expect(await cache.get('p', 'hot')).toBe('H');
    }
    expect(cache.size).toBe(8);
    // The cold entries went least recently used first: the last seven remain.
    expect(await cache.get('p', 'cold32')).toBeNull();
    expect(await cache.get('p', 'cold33')).toBe('C');
  });

  it('keyword rules count characters, not UTF-16 units', () => {
    expect(parseKeyword('🐈'.repeat(100), 100)).toHaveLength(200);
    expect(() => parseKeyword('🐈'.repeat(101), 100)).toThrow('keyword must be at most 100 characters (got 101)');
  });
});
