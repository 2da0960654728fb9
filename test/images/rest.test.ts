import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.js';
import { readJson, spawnWorker, type WorkerProcess } from './worker-process.js';

// REST image endpoints end to end: gateway in this process (no in-process worker), one standalone
// worker process, images from a local OpenAI-compatible server that fails on purpose.
let t: TestApp;
let fake: FakeOpenAi;
let worker: WorkerProcess;
let alice: TestAccount;
let bob: TestAccount;

beforeAll(async () => {
  fake = await startFakeOpenAi();
  t = await startTestApp({ IN_PROCESS_WORKER: 'false' });
  const uri = new URL(t.config.MONGODB_URI!);
  uri.pathname = `/${t.connection.db!.databaseName}`;
  worker = spawnWorker({
    MONGODB_URI: uri.toString(),
    IMAGE_PROVIDER: 'openai',
    IMAGE_API_URL: fake.url,
    IMAGE_API_KEY: 'sk-fake',
    IMAGE_RETRIES: '1',
    IMAGE_TIMEOUT_MS: '5000',
    WORKER_CONCURRENCY: '4',
    JOB_SWEEP_INTERVAL_MS: '1000',
    QUEUE_POLL_INTERVAL_MS: '100',
  });
  [alice, bob] = await Promise.all([t.createAccountWithKey({ credits: 20 }), t.createAccountWithKey({ credits: 5 })]);
  await worker.ready;
});

afterAll(async () => {
  worker?.kill('SIGTERM');
  await worker?.exited;
  await t?.close();
  await fake?.close();
});

const post = (key: string | null, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${t.baseUrl}/api/playground/images`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const getJob = (key: string | null, jobId: string) =>
  fetch(`${t.baseUrl}/api/playground/images/${jobId}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });

async function balance(account: TestAccount): Promise<number> {
  return (await t.services.credits.getAccount(account.accountId))!.credits;
}

async function pollFinal(key: string, jobId: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await getJob(key, jobId);
    expect(res.status).toBe(200);
    const job = await readJson(res);
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > deadline) throw new Error(`job still ${job.status}\n${worker.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function expectError(res: Response, status: number, code: string, error?: string | RegExp) {
  const body = await readJson(res);
  expect(res.status, JSON.stringify(body)).toBe(status);
  expect(body.code).toBe(code);
  expect(typeof body.requestId).toBe('string');
  if (typeof error === 'string') expect(body.error).toBe(error);
  else if (error) expect(body.error).toMatch(error);
  return body;
}

describe('POST /api/playground/images errors', () => {
  it('401s in the contract’s texts, before validation', async () => {
    await expectError(await post(null, { prompts: ['x'] }), 401, 'missing_authorization', 'Missing or invalid Authorization header');
    await expectError(await post(null, 'not json', { authorization: 'Basic abc' }), 401, 'missing_authorization');
    await expectError(await post('wi_live_123', { prompts: [] }), 401, 'invalid_api_key_format', 'Invalid API key format');
    await expectError(await post(`wi_live_${'0'.repeat(64)}`, { prompts: 7 }), 401, 'invalid_api_key', 'Invalid API key');
    await expectError(await getJob(null, '00000000-0000-4000-8000-000000000000'), 401, 'missing_authorization');
  });

  it('400 for every malformed body, naming the field and the rule; nothing charged', async () => {
    const before = await balance(alice);
    const cases: [unknown, RegExp][] = [
      [{}, /^prompts is required$/],
      [{ prompts: 'a cat' }, /^prompts must be an array of strings$/],
      [{ prompts: [] }, /^prompts must not be empty$/],
      [{ prompts: Array(51).fill('x') }, /^prompts must have at most 50 entries/],
      [{ prompts: ['ok', 5] }, /^prompts\[1\] must be a string$/],
      [{ prompts: ['ok', { a: 1 }] }, /^prompts\[1\] must be a string$/],
      [{ prompts: ['  \t '] }, /^prompts\[0\] must not be empty$/],
      [{ prompts: ['x'.repeat(2001)] }, /^prompts\[0\] must be at most 2000 characters/],
      [[1, 2], /^prompts is required$/],
    ];
    for (const [body, message] of cases) await expectError(await post(alice.key, body), 400, 'invalid_request', message);
    await expectError(await post(alice.key, '{"prompts": ['), 400, 'invalid_json');
    await expectError(await post(alice.key, 'prompts=a', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    await expectError(await post(alice.key, { prompts: ['x'.repeat(2 * 1024 * 1024)] }), 413, 'payload_too_large');
    expect(await balance(alice)).toBe(before);
  });

  it('402 when the balance is below the whole request: nothing charged, no job', async () => {
    const account = await t.createAccountWithKey({ credits: 2 });
    await expectError(await post(account.key, { prompts: ['a', 'b', 'c'] }), 402, 'insufficient_credits', 'Insufficient credits');
    expect(await balance(account)).toBe(2);
    expect(await t.connection.db!.collection('jobs').countDocuments({ accountId: account.accountId })).toBe(0);
  });
});

describe('image jobs end to end', () => {
  it('creates, runs to completed, and serves every image by signed URL without auth', async () => {
    const before = await balance(alice);
    const res = await post(alice.key, { prompts: ['a red fox', ' a blue whale ', 'a green moth'] });
    expect(res.status).toBe(201);
    const created = await readJson(res);
    expect(created).toEqual({ jobId: expect.stringMatching(/^[0-9a-f-]{36}$/), totalImages: 3, creditsUsed: 3, credits: before - 3 });
    expect(res.headers.get('location')).toBe(`/api/playground/images/${created.jobId}`);

    const job = await pollFinal(alice.key, created.jobId);
    expect(job).toMatchObject({ jobId: created.jobId, status: 'completed', totalImages: 3, succeededImages: 3, failedImages: 0, creditsUsed: 3, creditsRefunded: 0 });
    expect(Date.parse(job.completedAt)).toBeGreaterThanOrEqual(Date.parse(job.createdAt));
    expect(job.images.map((i: { index: number; prompt: string }) => [i.index, i.prompt])).toEqual([
      [0, 'a red fox'],
      [1, 'a blue whale'],
      [2, 'a green moth'],
    ]);
    for (const img of job.images) {
      expect(img).toMatchObject({ status: 'succeeded', error: null });
      const file = await fetch(img.url);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('image/png');
      expect(file.headers.get('etag')).toMatch(/^"/);
      expect(file.headers.get('cache-control')).toMatch(/max-age=\d+/);
      const bytes = Buffer.from(await file.arrayBuffer());
      expect((await sharp(bytes).metadata()).format).toBe('png');
      // Conditional request: not modified.
      const again = await fetch(img.url, { headers: { 'if-none-match': file.headers.get('etag')! } });
      expect(again.status).toBe(304);
    }
    expect(await balance(alice)).toBe(before - 3);
    expect(fake.requests.at(-1)!.authorization).toBe('Bearer sk-fake');
  });

  it('refuses tampered or expired image URLs, and hides jobs from other accounts', async () => {
    const created = await readJson(await post(alice.key, { prompts: ['secret garden'] }));
    const job = await pollFinal(alice.key, created.jobId);
    const url = new URL(job.images[0].url);
    const tampered = new URL(url);
    tampered.searchParams.set('sig', url.searchParams.get('sig')!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')));
    await expectError(await fetch(tampered), 403, 'invalid_signature');
    const longer = new URL(url);
    longer.searchParams.set('expires', String(Number(url.searchParams.get('expires')) + 3600));
    await expectError(await fetch(longer), 403, 'invalid_signature');
    const otherImage = new URL(url.toString().replace('/images/0?', '/images/1?'));
    await expectError(await fetch(otherImage), 403, 'invalid_signature');
    // Only the canonical forms verify: another spelling of the same index names no image, of the same expiry is tampering.
    await expectError(await fetch(url.toString().replace('/images/0?', '/images/00?')), 404, 'image_not_found');
    const paddedExpiry = new URL(url);
    paddedExpiry.searchParams.set('expires', `0${url.searchParams.get('expires')}`);
    await expectError(await fetch(paddedExpiry), 403, 'invalid_signature');
    const expired = t.services.imageJobs.signer;
    const past = new Date(Date.now() - 10 * 24 * 3600_000);
    await expectError(await fetch(`${t.baseUrl}${expired.path(created.jobId, 0, past)}`), 403, 'invalid_signature');

    await expectError(await getJob(bob.key, created.jobId), 404, 'job_not_found', 'Job not found');
    await expectError(await getJob(alice.key, '00000000-0000-4000-8000-000000000000'), 404, 'job_not_found', 'Job not found');
    await expectError(await getJob(alice.key, 'not-a-uuid'), 404, 'job_not_found', 'Job not found');
  });

  it('refunds a failed image exactly once (audited), through a provider that fails on purpose', async () => {
    const before = await balance(alice);
    const res = await post(alice.key, { prompts: ['fine', '[reject] forbidden', '[flaky:1] comes back'] });
    const created = await readJson(res);
    expect(created.credits).toBe(before - 3);
    const job = await pollFinal(alice.key, created.jobId);
    expect(job).toMatchObject({ status: 'completed', succeededImages: 2, failedImages: 1, creditsRefunded: 1 });
    expect(job.images[1]).toMatchObject({ status: 'failed', url: null, error: expect.stringContaining('rejected') });
    expect(job.images[2]).toMatchObject({ status: 'succeeded' });
    expect(fake.calls.get('[reject] forbidden')).toBe(1);
    expect(await balance(alice)).toBe(before - 2);
    // The sweep (the worker runs it every second) refunds nothing more, even one that finds every job stale.
    const later = new Date(Date.now() + 10 * t.config.JOB_LOCK_LIFETIME_MS);
    for (const at of [new Date(), later]) expect(await t.services.imageJobs.sweeper.sweep(at)).toMatchObject({ refundsSettled: 0 });
    expect(await balance(alice)).toBe(before - 2);
    const audit = await t.connection.db!.collection('audit_entries').find({ accountId: alice.accountId, event: 'credits.refunded' }).toArray();
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ amount: 1, opId: `refund:${created.jobId}:1` });
  });

  it('a job whose every image fails is failed and fully refunded', async () => {
    const before = await balance(alice);
    const created = await readJson(await post(alice.key, { prompts: ['[reject] one', '[reject] two'] }));
    const job = await pollFinal(alice.key, created.jobId);
    expect(job).toMatchObject({ status: 'failed', failedImages: 2, creditsRefunded: 2 });
    expect(await balance(alice)).toBe(before);
  });
});
