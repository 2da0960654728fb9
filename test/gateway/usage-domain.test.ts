import { afterEach, describe, expect, it, vi } from 'vitest';
import { CreditService } from '../../src/domain/credits/service.js';
import { DefinitionLookup } from '../../src/domain/definitions/service.js';
import { ImageRunner } from '../../src/domain/jobs/runner.js';
import { ImageJobs } from '../../src/domain/jobs/service.js';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { UsageService } from '../../src/domain/usage/service.js';
import { ProviderError, type ImageProvider } from '../../src/providers/images/types.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { MemoryImageStore, MemoryJobStore, MemoryQueue } from '../images/memory-fakes.js';
import { ScriptedProvider } from './fakes.js';
import { MemoryAccountStore, MemoryAuditStore, MemoryUsageStore } from './memory-fakes.js';

// Usage metering against in-memory stores: what counts (charges, refunds), under which service, source
// and day, and how the usage service reads and rolls up.
const actor = { actor: 'test', ip: '1.2.3.4', host: 'h' };
const KEY = 'a'.repeat(24);
const OTHER_KEY = 'b'.repeat(24);
const day = (iso: string) => new Date(`${iso}T00:00:00.000Z`);

function setup(start = '2025-03-10T12:00:00.000Z') {
  const clock = { now: new Date(start) };
  const now = () => clock.now;
  const accounts = new MemoryAccountStore();
  const audit = new MemoryAuditStore();
  const credits = new CreditService({ accounts, audit, host: 'h', now });
  const provider = new ScriptedProvider();
  const definitions = new DefinitionLookup({ credits, provider, cache: { get: async () => null, set: async () => undefined }, maxKeywordLength: 100 });
  const store = new MemoryUsageStore(accounts);
  const usage = new UsageService({ store, now });
  return { clock, accounts, credits, provider, definitions, store, usage };
}

function row(dayIso: string, service: string, source: string, calls: number, credits: number, refunded = 0) {
  return { day: day(dayIso), service, source, calls, credits, refunded };
}

class RejectingImages implements ImageProvider {
  readonly name = 'scripted';
  readonly offer = BUILTIN_OFFER;
  async generate(prompt: string) {
    if (prompt.startsWith('reject')) throw new ProviderError('provider_rejected', 'rejected');
    return { data: Buffer.from(prompt), contentType: 'image/png' };
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe('usage counting (domain)', () => {
  it('a lookup counts one call and its credit, per key, service and UTC day', async () => {
    const { clock, credits, definitions, usage } = setup();
    const acc = await credits.createAccount('a', 10, actor);
    await definitions.lookup({ accountId: acc.id, keyId: KEY }, 'dog');
    await definitions.lookup({ accountId: acc.id, keyId: KEY }, 'cat');
    await definitions.lookup({ accountId: acc.id, keyId: OTHER_KEY }, 'cat');
    clock.now = new Date('2025-03-11T00:00:00.000Z'); // the next UTC day
    await definitions.lookup({ accountId: acc.id, keyId: KEY }, 'dog');
    expect(await usage.forAccount(acc.id)).toEqual([
      row('2025-03-10', 'definitions', KEY, 2, 2),
      row('2025-03-10', 'definitions', OTHER_KEY, 1, 1),
      row('2025-03-11', 'definitions', KEY, 1, 1),
    ]);
  });

  it('a failed lookup counts its call and its refund; a 402 counts nothing', async () => {
    const { credits, provider, definitions, usage } = setup();
    const acc = await credits.createAccount('a', 1, actor);
    provider.mode = 'unavailable';
    await expect(definitions.lookup({ accountId: acc.id, keyId: KEY }, 'dog')).rejects.toMatchObject({ code: 'provider_unavailable' });
    provider.mode = 'ok';
    await definitions.lookup({ accountId: acc.id, keyId: KEY }, 'dog');
    await expect(definitions.lookup({ accountId: acc.id, keyId: KEY }, 'dog')).rejects.toMatchObject({ code: 'insufficient_credits' });
    expect(await usage.forAccount(acc.id)).toEqual([row('2025-03-10', 'definitions', KEY, 2, 2, 1)]);
  });

  it('a console user (no key) counts under console', async () => {
    const { credits, definitions, usage } = setup();
    const acc = await credits.createAccount('a', 5, actor);
    await definitions.lookup({ accountId: acc.id, keyId: null, userId: 'u1' }, 'dog');
    expect(await usage.forAccount(acc.id)).toEqual([row('2025-03-10', 'definitions', 'console', 1, 1)]);
  });

  it('grants are not usage; a charge retried with its op id counts once', async () => {
    const { credits, usage } = setup();
    const acc = await credits.createAccount('a', 5, actor);
    await credits.grant(acc.id, 10, 'grant:1', actor);
    const tag = { service: 'images', source: KEY } as const;
    await credits.charge(acc.id, 3, 'job:1', tag);
    await credits.charge(acc.id, 3, 'job:1', tag);
    await credits.refund(acc.id, 1, 'refund:job:1:0', { reason: 'image generation failed' }, tag);
    await credits.refund(acc.id, 1, 'refund:job:1:0', { reason: 'image generation failed' }, tag);
    expect(await credits.balances([acc.id])).toEqual([13]);
    expect(await usage.forAccount(acc.id)).toEqual([row('2025-03-10', 'images', KEY, 1, 3, 1)]);
  });

  it('an image job counts one call and its credits at creation; a failed image refunds under the job’s source', async () => {
    const { credits, usage } = setup();
    const acc = await credits.createAccount('a', 10, actor);
    const jobs = new MemoryJobStore();
    const queue = new MemoryQueue();
    const service = new ImageJobs({ jobs, credits, queue, signer: new ImageUrlSigner('x'.repeat(40), 3600), limits: { maxPrompts: 50, maxPromptLength: 2000 }, offer: BUILTIN_OFFER });
    const runner = new ImageRunner({ jobs, credits, provider: new RejectingImages(), images: new MemoryImageStore(), lockLifetimeMs: 1000, maxAttempts: 3 });
    await service.create({ accountId: acc.id, keyId: KEY }, ['a fox', 'reject this']);
    await service.create({ accountId: acc.id, keyId: null, userId: 'u1' }, ['reject me too']);
    for (let e = queue.take(); e; e = queue.take()) await runner.run(e.jobId, e.index);
    expect(await credits.balances([acc.id])).toEqual([9]);
    expect(await usage.forAccount(acc.id)).toEqual([row('2025-03-10', 'images', KEY, 1, 2, 1), row('2025-03-10', 'images', 'console', 1, 1, 1)]);
  });
});

describe('UsageService', () => {
  it('sorts by day, then service, then source, and reads the last 30 days by default', async () => {
    const { clock, credits, usage } = setup('2025-01-01T10:00:00.000Z');
    const acc = await credits.createAccount('a', 100, actor);
    const charge = (service: 'images' | 'definitions', source: string) => credits.charge(acc.id, 1, null, { service, source });
    await charge('images', KEY); // 2025-01-01: 40 days before the last day below, outside the default range
    clock.now = new Date('2025-01-12T10:00:00.000Z'); // 29 days before the last day: inside
    await charge('images', KEY);
    clock.now = new Date('2025-02-10T23:59:59.999Z');
    await charge('images', OTHER_KEY);
    await charge('images', KEY);
    await charge('definitions', 'console');
    await charge('definitions', KEY);
    expect(await usage.forAccount(acc.id)).toEqual([
      row('2025-01-12', 'images', KEY, 1, 1),
      row('2025-02-10', 'definitions', KEY, 1, 1),
      row('2025-02-10', 'definitions', 'console', 1, 1),
      row('2025-02-10', 'images', KEY, 1, 1),
      row('2025-02-10', 'images', OTHER_KEY, 1, 1),
    ]);
    expect(await usage.forAccount(acc.id, { from: '2024-12-31', to: day('2025-01-12') })).toEqual([row('2025-01-01', 'images', KEY, 1, 1), row('2025-01-12', 'images', KEY, 1, 1)]);
    expect(await usage.forAccount(acc.id, { from: '2025-01-02', to: '2025-01-11' })).toEqual([]);
  });

  it('rolls up days before yesterday (UTC) when usage is read; counts read the same before and after', async () => {
    const { clock, credits, store, usage } = setup('2025-03-08T23:00:00.000Z');
    const acc = await credits.createAccount('a', 100, actor);
    const tag = { service: 'definitions', source: KEY } as const;
    await credits.charge(acc.id, 1, null, tag); // 03-08
    clock.now = new Date('2025-03-09T01:00:00.000Z');
    await credits.charge(acc.id, 1, null, tag); // 03-09: yesterday, once it is 03-10
    clock.now = new Date('2025-03-10T00:30:00.000Z');
    await credits.charge(acc.id, 1, null, tag); // 03-10: today
    const rows = await usage.forAccount(acc.id);
    expect(store.rollUps).toEqual([{ accountId: acc.id, before: day('2025-03-09') }]);
    expect([...store.rows.get(acc.id)!.values()].map((r) => r.day)).toEqual([day('2025-03-08')]);
    expect(rows).toEqual([row('2025-03-08', 'definitions', KEY, 1, 1), row('2025-03-09', 'definitions', KEY, 1, 1), row('2025-03-10', 'definitions', KEY, 1, 1)]);
    expect(await usage.forAccount(acc.id)).toEqual(rows);
  });

  it('rollUpStale rolls up every account holding finished days; startRollUps does it on a timer', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const { clock, credits, store, usage } = setup('2025-03-01T12:00:00.000Z');
    const a = await credits.createAccount('a', 10, actor);
    const b = await credits.createAccount('b', 10, actor);
    await credits.charge(a.id, 1, null, { service: 'images', source: KEY });
    await credits.charge(b.id, 1, null, { service: 'images', source: OTHER_KEY });
    clock.now = new Date('2025-03-05T12:00:00.000Z');
    expect(await usage.rollUpStale(1)).toBe(1);
    const stop = usage.startRollUps({ everyMs: 60_000, batch: 1 });
    await vi.advanceTimersByTimeAsync(60_000);
    stop();
    expect(store.rows.get(a.id)?.size).toBe(1);
    expect(store.rows.get(b.id)?.size).toBe(1);
    expect(await usage.rollUpStale()).toBe(0);
  });

  it('validates the account id and the dates, naming the field', async () => {
    const { credits, usage } = setup();
    const acc = await credits.createAccount('a', 1, actor);
    const invalid = (field: string, message: string | RegExp) => expect.objectContaining({ code: 'invalid_request', field, message: typeof message === 'string' ? message : expect.stringMatching(message) });
    for (const bad of [undefined, '', 'xyz', 42, 'a'.repeat(25)]) {
      await expect(usage.forAccount(bad)).rejects.toEqual(invalid('account', 'account must be an account id (24 hexadecimal characters)'));
    }
    await expect(usage.forAccount('f'.repeat(24))).rejects.toEqual(invalid('account', `account ${'f'.repeat(24)} does not exist`));
    for (const bad of ['2025-13-01', '2025-02-30', '10/03/2025', '2025-3-1', 20250301, new Date(Number.NaN), null]) {
      await expect(usage.forAccount(acc.id, { from: bad })).rejects.toEqual(invalid('from', 'from must be a date (YYYY-MM-DD)'));
      await expect(usage.forAccount(acc.id, { to: bad })).rejects.toEqual(invalid('to', 'to must be a date (YYYY-MM-DD)'));
    }
    await expect(usage.forAccount(acc.id, { from: '2025-03-02', to: '2025-03-01' })).rejects.toEqual(invalid('from', 'from must not be after to'));
    await expect(usage.forAccount(acc.id, { from: '2024-01-01', to: '2025-03-01' })).rejects.toEqual(invalid('from', /at most 366 days/));
    expect(await usage.forAccount(` ${acc.id.toUpperCase()} `, { from: '2024-03-02', to: '2025-03-01' })).toEqual([]);
  });
});
