import { createClient, type Client } from 'graphql-ws';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { GatedImageProvider } from './memory-fakes.js';

// Cancel through the doors (REST and GraphQL, `jobStatus`) on the test database, with the image worker
// in this process on a provider that holds `hold …` prompts mid-flight until the test lets them go.
// WORKER_CONCURRENCY=2: two held images fill the worker, and the images of later jobs stay queued.

let t: TestApp;
let worker: RunningWorker;
let alice: TestAccount;
let bob: TestAccount;
const provider = new GatedImageProvider();
const clients: Client[] = [];
const INITIAL = 1000;

beforeAll(async () => {
  t = await startTestApp({ WORKER_CONCURRENCY: '2', QUEUE_POLL_INTERVAL_MS: '50', deps: { imageProvider: provider } });
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
  [alice, bob] = await Promise.all([t.createAccountWithKey({ credits: INITIAL }), t.createAccountWithKey({ credits: 10 })]);
});

// A test that fails while holding images would leave the worker's two slots taken, and every later
// test would time out waiting for it: whatever a test left held is let go.
afterEach(() => provider.releaseAll());

afterAll(async () => {
  provider.releaseAll();
  await Promise.all(clients.map((c) => c.dispose()));
  await worker?.stop(10_000);
  await t?.close();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

async function rest(method: 'GET' | 'POST', path: string, key = alice.key, body?: unknown) {
  const res = await fetch(`${t.baseUrl}${path}`, {
    method,
    headers: { ...bearer(key), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as any };
}

const create = async (prompts: string[], key = alice.key) => {
  const res = await rest('POST', '/api/playground/images', key, { prompts });
  expect(res.status).toBe(201);
  return res.body.jobId as string;
};
const cancel = (jobId: string, key = alice.key) => rest('POST', `/api/playground/images/${jobId}/cancel`, key);
const getJob = async (jobId: string) => (await rest('GET', `/api/playground/images/${jobId}`)).body;
const balance = async () => (await t.services.credits.getAccount(alice.accountId))!.credits;

async function gql(query: string, variables: Record<string, unknown>, key = alice.key) {
  const res = await fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(key) }, body: JSON.stringify({ query, variables }) });
  return { status: res.status, body: (await res.json()) as any };
}

async function untilFinal(jobId: string) {
  let job: any;
  await until(async () => ['completed', 'failed', 'canceled'].includes((job = await getJob(jobId)).status));
  return job;
}

async function refundEntries(jobId: string) {
  const out = [];
  for await (const e of t.services.audit.exportForAccount(alice.accountId)) {
    if (e.event === 'credits.refunded' && (e.details as { jobId?: string } | null)?.jobId === jobId) out.push(e);
  }
  return out;
}

describe('cancel a job', () => {
  it('running: the held images finish (one kept, one failed and refunded), the queued one is refunded at once; jobStatus ends with canceled', async () => {
    const before = await balance();
    const prompts = ['hold r0', 'hold r1', 'hold r2'];
    const jobId = await create(prompts);
    // The worker takes two of the three (which two is the queue's choice: under load it is not always
    // the first two); the third stays queued.
    await until(() => prompts.filter((p) => provider.calls.includes(p)).length === 2);
    const [kept, rejected] = prompts.filter((p) => provider.calls.includes(p)) as [string, string];
    await Promise.all([provider.started(kept), provider.started(rejected)]);
    const queued = prompts.findIndex((p) => !provider.calls.includes(p));
    const statuses = (byPrompt: (prompt: string, i: number) => string) => prompts.map(byPrompt);

    const client = createClient({ url: `${t.baseUrl.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { Authorization: `Bearer ${alice.key}` } });
    clients.push(client);
    const pushed: string[] = [];
    const ended = new Promise<unknown>((resolve) => {
      client.subscribe(
        { query: 'subscription($id: ID!) { jobStatus(jobId: $id) { status } }', variables: { id: jobId } },
        { next: (m) => pushed.push((m.data as any).jobStatus.status), error: resolve, complete: () => resolve('complete') },
      );
    });
    await until(() => pushed.length > 0);

    const res = await cancel(jobId);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.body).toMatchObject({ jobId, status: 'running', creditsRefunded: 1, completedAt: null });
    expect(res.body.images.map((i: any) => i.status)).toEqual(statuses((_, i) => (i === queued ? 'canceled' : 'running')));
    expect(await balance()).toBe(before - 2);

    provider.release(kept);
    provider.release(rejected, 'reject');
    expect(await ended).toBe('complete');
    expect(pushed.at(-1)).toBe('canceled');
    const job = await getJob(jobId);
    expect(job).toMatchObject({ status: 'canceled', succeededImages: 1, failedImages: 1, creditsRefunded: 2, completedAt: expect.any(String) });
    expect(job.images.map((i: any) => i.status)).toEqual(statuses((p, i) => (i === queued ? 'canceled' : p === kept ? 'succeeded' : 'failed')));
    expect(await balance()).toBe(before - 1);
    const refunded = [prompts.indexOf(rejected), queued].map((i) => `refund:${jobId}:${i}`).sort();
    expect((await refundEntries(jobId)).map((e) => e.opId).sort()).toEqual(refunded);
    expect(provider.calls).not.toContain(prompts[queued]);
  });

  it('queued (over GraphQL): every image canceled and refunded at once; the worker drops its entries without running them', async () => {
    const before = await balance();
    const blocker = await create(['hold b0', 'hold b1']);
    await Promise.all([provider.started('hold b0'), provider.started('hold b1')]);
    const jobId = await create(['q0', 'q1', 'q2']);
    const query = 'mutation($id: ID!) { cancelJob(id: $id) { id status creditsRefunded completedAt images { status } } }';
    const res = await gql(query, { id: jobId });
    expect(res.status).toBe(200);
    expect(res.body.data.cancelJob).toMatchObject({ id: jobId, status: 'canceled', creditsRefunded: 3, completedAt: expect.any(String) });
    expect(res.body.data.cancelJob.images).toEqual(Array(3).fill({ status: 'canceled' }));
    expect(await balance()).toBe(before - 2);
    // Idempotent: the same job again, nothing refunded twice.
    const again = await gql(query, { id: jobId });
    expect(again.body.data.cancelJob).toEqual(res.body.data.cancelJob);
    expect((await cancel(jobId)).body).toMatchObject({ status: 'canceled', creditsRefunded: 3 });

    provider.release('hold b0');
    provider.release('hold b1');
    expect((await untilFinal(blocker)).status).toBe('completed');
    await until(async () => (await t.services.imageJobs.queue.queuedIndexes(jobId)).size === 0);
    expect(provider.calls.filter((p) => p.startsWith('q'))).toEqual([]);
    expect(await balance()).toBe(before - 2);
    expect(await refundEntries(jobId)).toHaveLength(3);
  });

  it('a completed or failed job is 409 job_finished (REST) and CONFLICT (GraphQL)', async () => {
    for (const prompt of ['done', 'reject me']) {
      const jobId = await create([prompt]);
      await untilFinal(jobId);
      const res = await cancel(jobId);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: 'Job already finished (completed or failed): nothing to cancel', code: 'job_finished', requestId: expect.any(String) });
      const g = await gql('mutation($id: ID!) { cancelJob(id: $id) { status } }', { id: jobId });
      expect(g.body.errors[0]).toMatchObject({ message: res.body.error, extensions: { code: 'CONFLICT', reason: 'job_finished' } });
    }
  });

  it('another account’s, unknown or malformed job is 404 Job not found, and stays as it was', async () => {
    const blocker = await create(['hold f0', 'hold f1']);
    await Promise.all([provider.started('hold f0'), provider.started('hold f1')]);
    const jobId = await create(['mine']);
    for (const [id, key] of [[jobId, bob.key], ['00000000-0000-4000-8000-000000000000', alice.key], ['not-a-job', alice.key]] as const) {
      const res = await cancel(id, key);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ error: 'Job not found', code: 'job_not_found' });
      const g = await gql('mutation($id: ID!) { cancelJob(id: $id) { status } }', { id }, key);
      expect(g.body.errors[0]).toMatchObject({ message: 'Job not found', extensions: { code: 'NOT_FOUND', reason: 'job_not_found' } });
    }
    expect((await getJob(jobId)).status).toBe('queued');
    provider.release('hold f0');
    provider.release('hold f1');
    expect((await untilFinal(jobId)).status).toBe('completed');
    await untilFinal(blocker);
  });

  it('refunds stay exact under ten concurrent cancels racing the worker', async () => {
    const before = await balance();
    const prompts = Array.from({ length: 12 }, (_, i) => (i % 4 === 3 ? `reject race ${i}` : `race ${i}`));
    const jobId = await create(prompts);
    // Let the worker get going, then cancel from ten requests at once.
    await provider.started('race 0');
    const answers = await Promise.all(Array.from({ length: 10 }, () => cancel(jobId)));
    for (const a of answers) expect([200, 409]).toContain(a.status);
    const job = await untilFinal(jobId);
    if (answers.some((a) => a.status === 200)) expect(job.status).toBe('canceled');
    const canceled = job.images.filter((i: any) => i.status === 'canceled').length;
    expect(job.succeededImages + job.failedImages + canceled).toBe(12);
    expect(job.creditsRefunded).toBe(job.failedImages + canceled);
    expect(await balance()).toBe(before - job.succeededImages);
    const refunds = await refundEntries(jobId);
    expect(refunds).toHaveLength(job.creditsRefunded);
    expect(new Set(refunds.map((e) => e.opId)).size).toBe(refunds.length);
  });
});
