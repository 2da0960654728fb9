import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { toObjectId } from '../../src/data/accounts.js';
import { usageBucket, type UsageDoc } from '../../src/data/models/usage.js';
import { utcDay, type MeteredService, type UsageRow } from '../../src/domain/usage/types.js';
import { ProviderError, type ImageProvider } from '../../src/providers/images/types.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { ScriptedProvider } from './fakes.js';

// Usage metering end to end: REST lookups and image jobs counted per key, service and UTC day in the
// account's balance update; the roll-up of finished days into the `usage` collection, crash-safe; the CLI.
class RejectingImages implements ImageProvider {
  readonly name = 'scripted';
  readonly offer = BUILTIN_OFFER;
  async generate(prompt: string) {
    if (prompt.startsWith('reject')) throw new ProviderError('provider_rejected', 'rejected on purpose');
    return { data: Buffer.from(`png:${prompt}`), contentType: 'image/png' };
  }
}

const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
const provider = new ScriptedProvider();
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', deps: { definitionProvider: provider, imageProvider: new RejectingImages() } });
});

afterAll(async () => {
  await t?.close();
});

const post = (key: string, path: string, body: unknown) =>
  fetch(`${t.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: JSON.stringify(body) });
const lookup = (key: string, keyword = 'dog') => post(key, '/api/playground/query', { keyword });
const generate = (key: string, prompts: string[]) => post(key, '/api/playground/images', { prompts });

const accounts = () => t.connection.db!.collection('accounts');
const usageRows = () => t.connection.db!.collection<UsageDoc>('usage');
const usageOf = (accountId: string, range?: { from?: unknown; to?: unknown }) => t.services.usage.forAccount(accountId, range);
const account = async (accountId: string) => (await accounts().findOne({ _id: toObjectId(accountId)! }))!;

/** Each (service, source)'s counts summed over days, so a test that runs across UTC midnight still passes. */
function totals(rows: UsageRow[]): Record<string, { calls: number; credits: number; refunded: number }> {
  const out: Record<string, { calls: number; credits: number; refunded: number }> = {};
  for (const r of rows) {
    const k = `${r.service} ${r.source}`;
    const sum = (out[k] ??= { calls: 0, credits: 0, refunded: 0 });
    sum.calls += r.calls;
    sum.credits += r.credits;
    sum.refunded += r.refunded;
  }
  return out;
}

/** Runs every image of a job in this process (no worker in this file), as a worker would. */
async function runJob(jobId: string, images: number): Promise<void> {
  for (let i = 0; i < images; i++) expect((await t.services.imageJobs.runner.run(jobId, i)).kind).toMatch(/^(succeeded|failed)$/);
}

/** Counters written straight onto the account, as charges on past days would have left them. */
async function writeBucket(accountId: string, day: Date, service: MeteredService, source: string, counters: { calls?: number; credits?: number; refunded?: number }) {
  const b = `usage.${usageBucket(day, service, source)}`;
  const inc = Object.fromEntries(Object.entries(counters).map(([k, v]) => [`${b}.${k}`, v]));
  await accounts().updateOne({ _id: toObjectId(accountId)! }, { $inc: inc, $min: { usageOldestDay: day } });
}

function row(day: Date, service: MeteredService, source: string, calls: number, credits: number, refunded = 0): UsageRow {
  return { day, service, source, calls, credits, refunded };
}

describe('usage counted by REST calls', () => {
  it('counts lookups and image jobs per key, service and UTC day; failed images count their refund', async () => {
    const first = utcDay(new Date());
    const a = await t.createAccountWithKey({ credits: 20 });
    const second = await t.services.keys.create(a.accountId, 'second key', actor);
    for (const word of ['dog', 'cat', 'tree']) expect((await lookup(a.key, word)).status).toBe(200);
    expect((await lookup(second.key)).status).toBe(200);
    const res = await generate(a.key, ['a fox', 'reject this', 'a moth']);
    expect(res.status).toBe(201);
    await runJob(((await res.json()) as { jobId: string }).jobId, 3);

    const rows = await usageOf(a.accountId);
    for (const r of rows) expect([first.getTime(), utcDay(new Date()).getTime()]).toContain(r.day.getTime());
    expect(totals(rows)).toEqual({
      [`definitions ${a.keyId}`]: { calls: 3, credits: 3, refunded: 0 },
      [`definitions ${second.id}`]: { calls: 1, credits: 1, refunded: 0 },
      [`images ${a.keyId}`]: { calls: 1, credits: 3, refunded: 1 },
    });
    expect((await t.services.credits.getAccount(a.accountId))!.credits).toBe(20 - 4 - 3 + 1);
  });

  it('a lookup the provider fails counts its call and its refund', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    provider.mode = 'unavailable';
    try {
      // A word no earlier test looked up: the definition cache must not answer it.
      expect((await lookup(a.key, 'provider-down')).status).toBe(503);
    } finally {
      provider.mode = 'ok';
    }
    expect(totals(await usageOf(a.accountId))).toEqual({ [`definitions ${a.keyId}`]: { calls: 1, credits: 1, refunded: 1 } });
    expect((await t.services.credits.getAccount(a.accountId))!.credits).toBe(5);
  });

  it('a console user (principal without a key) counts under console', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    const principal = { accountId: a.accountId, keyId: null, userId: 'user-1' };
    await t.services.definitions.lookup(principal, 'dog');
    const job = await t.services.jobs.create(principal, ['reject me']);
    await runJob(job.jobId, 1);
    expect(totals(await usageOf(a.accountId))).toEqual({
      'definitions console': { calls: 1, credits: 1, refunded: 0 },
      'images console': { calls: 1, credits: 1, refunded: 1 },
    });
  });

  it('a 402 counts nothing', async () => {
    const a = await t.createAccountWithKey({ credits: 0 });
    expect((await lookup(a.key)).status).toBe(402);
    expect((await generate(a.key, ['a fox'])).status).toBe(402);
    expect(await usageOf(a.accountId)).toEqual([]);
    expect(await account(a.accountId)).not.toHaveProperty('usage');
  });

  it('50 concurrent lookups count exactly 50 calls', async () => {
    const a = await t.createAccountWithKey({ credits: 100 });
    const statuses = await Promise.all(Array.from({ length: 50 }, (_, i) => lookup(a.key, `word${i}`).then((r) => r.status)));
    expect(statuses).toEqual(Array(50).fill(200));
    expect(totals(await usageOf(a.accountId))).toEqual({ [`definitions ${a.keyId}`]: { calls: 50, credits: 50, refunded: 0 } });
    expect((await t.services.credits.getAccount(a.accountId))!.credits).toBe(50);
  });

  it('other reads of the account leave the counters out', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    expect((await lookup(a.key)).status).toBe(200);
    expect(await account(a.accountId)).toHaveProperty('usage');
    expect(Object.keys((await t.services.credits.getAccount(a.accountId))!).sort()).toEqual(['createdAt', 'credits', 'id', 'name']);
  });
});

describe('roll-up of finished days', () => {
  // Fixed relative to now: days before yesterday move, yesterday and today stay on the account.
  const today = () => utcDay(new Date());

  it('moves days before yesterday to the usage collection, keeps recent days, and reads the same after', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    const d = (n: number) => utcDay(new Date(), -n);
    await writeBucket(a.accountId, d(5), 'definitions', a.keyId, { calls: 4, credits: 4 });
    await writeBucket(a.accountId, d(2), 'images', 'console', { calls: 1, credits: 2, refunded: 1 });
    await writeBucket(a.accountId, d(1), 'definitions', a.keyId, { calls: 2, credits: 2 });
    const range = { from: d(10), to: today() };
    const expected = [
      row(d(5), 'definitions', a.keyId, 4, 4),
      row(d(2), 'images', 'console', 1, 2, 1),
      row(d(1), 'definitions', a.keyId, 2, 2),
    ];

    expect(await usageOf(a.accountId, range)).toEqual(expected);
    const doc = await account(a.accountId);
    expect(Object.keys(doc.usage)).toEqual([usageBucket(d(1), 'definitions', a.keyId)]);
    // Yesterday's bucket is still on the account: the marker says when to look again.
    expect(doc.usageOldestDay).toEqual(d(1));
    const moved = await usageRows().find({ accountId: a.accountId }).sort({ day: 1 }).toArray();
    expect(moved).toEqual([
      { _id: `${a.accountId}:${usageBucket(d(5), 'definitions', a.keyId)}`, accountId: a.accountId, day: d(5), service: 'definitions', source: a.keyId, calls: 4, credits: 4, refunded: 0 },
      { _id: `${a.accountId}:${usageBucket(d(2), 'images', 'console')}`, accountId: a.accountId, day: d(2), service: 'images', source: 'console', calls: 1, credits: 2, refunded: 1 },
    ]);

    // Idempotent: reading (and so rolling up) again changes nothing.
    expect(await usageOf(a.accountId, range)).toEqual(expected);
    expect(await usageRows().find({ accountId: a.accountId }).sort({ day: 1 }).toArray()).toEqual(moved);
    // A range without recent days reads the collection alone.
    expect(await usageOf(a.accountId, { from: d(6), to: d(2) })).toEqual(expected.slice(0, 2));
  });

  it('a crash between writing the row and unsetting the bucket never double counts', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    const day = utcDay(new Date(), -3);
    const bucket = usageBucket(day, 'definitions', a.keyId);
    await writeBucket(a.accountId, day, 'definitions', a.keyId, { calls: 5, credits: 5 });
    // Step 1 done (the row holds the bucket's values), step 2 never ran: the bucket is in both places.
    await usageRows().insertOne({ _id: `${a.accountId}:${bucket}`, accountId: a.accountId, day, service: 'definitions', source: a.keyId, calls: 5, credits: 5, refunded: 0 });
    const range = { from: day, to: day };
    const rows = await t.services.usage.forAccount(a.accountId, range);
    expect(rows).toEqual([row(day, 'definitions', a.keyId, 5, 5)]);
    // The read's roll-up finished the move.
    expect(await account(a.accountId)).not.toHaveProperty(`usage.${bucket}`);
    expect(await usageRows().countDocuments({ accountId: a.accountId })).toBe(1);
    expect(await usageOf(a.accountId, range)).toEqual(rows);
  });

  it('a row older than the bucket (its roll-up read older values) is overridden by the account, then raised', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    const day = utcDay(new Date(), -4);
    const bucket = usageBucket(day, 'images', a.keyId);
    await usageRows().insertOne({ _id: `${a.accountId}:${bucket}`, accountId: a.accountId, day, service: 'images', source: a.keyId, calls: 3, credits: 3, refunded: 0 });
    await writeBucket(a.accountId, day, 'images', a.keyId, { calls: 6, credits: 9, refunded: 2 });
    // What a reader sees while the bucket is in both places: the account's values, never the sum.
    const { MongoUsageStore } = await import('../../src/data/usage.js');
    const store = new MongoUsageStore(t.connection);
    expect(await store.read(a.accountId, day, day)).toEqual([row(day, 'images', a.keyId, 6, 9, 2)]);
    await store.rollUp(a.accountId, utcDay(new Date(), -1));
    expect(await store.read(a.accountId, day, day)).toEqual([row(day, 'images', a.keyId, 6, 9, 2)]);
    expect(await usageRows().findOne({ _id: `${a.accountId}:${bucket}` })).toMatchObject({ calls: 6, credits: 9, refunded: 2 });
    // A late roll-up holding the old values cannot lower the row.
    await usageRows().updateOne({ _id: `${a.accountId}:${bucket}` }, { $max: { calls: 3, credits: 3, refunded: 0 } });
    expect(await store.read(a.accountId, day, day)).toEqual([row(day, 'images', a.keyId, 6, 9, 2)]);
  });

  it('rollUpStale moves the finished days of accounts nobody reads, and then leaves them small', async () => {
    const [a, b] = await Promise.all([t.createAccountWithKey({ credits: 5 }), t.createAccountWithKey({ credits: 5 })]);
    await writeBucket(a.accountId, utcDay(new Date(), -7), 'definitions', a.keyId, { calls: 1, credits: 1 });
    await writeBucket(b.accountId, utcDay(new Date(), -2), 'images', b.keyId, { calls: 2, credits: 4 });
    expect(await t.services.usage.rollUpStale(100)).toBeGreaterThanOrEqual(2);
    for (const acc of [a, b]) {
      // Nothing left: neither counters nor marker weigh on the account.
      const doc = await account(acc.accountId);
      expect(doc).not.toHaveProperty('usage');
      expect(doc).not.toHaveProperty('usageOldestDay');
    }
    expect(await t.services.usage.rollUpStale(100)).toBe(0);
    expect(totals(await usageOf(b.accountId))).toEqual({ [`images ${b.keyId}`]: { calls: 2, credits: 4, refunded: 0 } });
  });

  it('charges after a roll-up count on the account again', async () => {
    const a: TestAccount = await t.createAccountWithKey({ credits: 5 });
    await writeBucket(a.accountId, utcDay(new Date(), -3), 'definitions', a.keyId, { calls: 1, credits: 1 });
    await t.services.usage.rollUpStale(100);
    expect((await lookup(a.key)).status).toBe(200);
    expect((await account(a.accountId)).usageOldestDay).toEqual(utcDay(new Date()));
    expect(totals(await usageOf(a.accountId))).toEqual({ [`definitions ${a.keyId}`]: { calls: 2, credits: 2, refunded: 0 } });
  });
});

describe('gateway-cli usage', () => {
  async function cli(...argv: string[]) {
    let stdout = '';
    let stderr = '';
    const uri = t.config.MONGODB_URI!.replace(/\/?$/, `/${t.connection.db!.databaseName}`);
    const code = await runCli(argv, { stdout: (s) => void (stdout += s), stderr: (s) => (stderr += s), env: { MONGODB_URI: uri } });
    return { code, stdout, stderr };
  }

  it('prints the rows as JSON, days as YYYY-MM-DD', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    const day = utcDay(new Date(), -3);
    await writeBucket(a.accountId, day, 'definitions', a.keyId, { calls: 2, credits: 2, refunded: 1 });
    const iso = day.toISOString().slice(0, 10);
    const res = await cli('usage', '--account', a.accountId, '--from', iso, '--to', iso);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual([{ day: iso, service: 'definitions', source: a.keyId, calls: 2, credits: 2, refunded: 1 }]);
    expect(JSON.parse((await cli('usage', '--account', a.accountId)).stdout)).toEqual(JSON.parse(res.stdout));
  });

  it('names the bad option', async () => {
    const a = await t.createAccountWithKey({ credits: 5 });
    expect(await cli('usage', '--account', a.accountId, '--from', '2025-02-30')).toMatchObject({ code: 1, stderr: 'error: from must be a date (YYYY-MM-DD)\n' });
    expect(await cli('usage', '--account', 'nope')).toMatchObject({ code: 1, stderr: 'error: account must be an account id (24 hexadecimal characters)\n' });
    expect(await cli('usage')).toMatchObject({ code: 2, stderr: expect.stringContaining('usage needs --account') });
  });
});
