// Webhooks end to end on one gateway with its in-process worker: every delivery goes to a real
// receiver on 127.0.0.1 that verifies it with the `standardwebhooks` package. Waits are on
// conditions; the retry spacing is asserted as a lower bound only (the machine is busy).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ImageProvider } from '../../src/providers/images/types.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { ProviderError } from '../../src/providers/images/types.js';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from './receiver.js';

class ScriptedImages implements ImageProvider {
  readonly name = 'scripted';
  readonly offer = BUILTIN_OFFER;
  /** `hold…` prompts wait here until released (a job that is still running when it is canceled). */
  readonly held = new Map<string, () => void>();
  async generate(prompt: string) {
    if (prompt.startsWith('reject')) throw new ProviderError('provider_rejected', 'rejected on purpose');
    if (prompt.startsWith('hold')) await new Promise<void>((resolve) => this.held.set(prompt, resolve));
    return { data: Buffer.from(`png:${prompt}`), contentType: 'image/png' };
  }
}
const images = new ScriptedImages();

const SCHEDULE_MS = [300, 600, 900];
let t: TestApp;
let worker: RunningWorker;
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await startTestApp({
    IN_PROCESS_WORKER: 'false',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_SCHEDULE: SCHEDULE_MS.map((ms) => `${ms}ms`).join(','),
    JOB_SWEEP_INTERVAL_MS: '1000',
    deps: { imageProvider: images },
  });
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
});

afterAll(async () => {
  await worker?.stop(5_000);
  await t?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function api(account: TestAccount, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${account.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** An account with a receiver registered for `events`. */
async function subscribed(events?: string[], credits = 100): Promise<{ account: TestAccount; receiver: Receiver; endpointId: string }> {
  const account = await t.createAccountWithKey({ credits });
  const receiver = await startReceiver();
  receivers.push(receiver);
  const res = await api(account, 'POST', '/api/webhooks', { url: receiver.url, ...(events ? { events } : {}) });
  expect(res.status).toBe(201);
  const created = (await res.json()) as { id: string; secret: string };
  receiver.secret = created.secret;
  return { account, receiver, endpointId: created.id };
}

async function generate(account: TestAccount, prompts: string[]): Promise<string> {
  const res = await api(account, 'POST', '/api/playground/images', { prompts });
  expect(res.status).toBe(201);
  return ((await res.json()) as { jobId: string }).jobId;
}

describe('events', () => {
  it('job.completed: delivered once, signed, with the job as GET returns it', async () => {
    const { account, receiver } = await subscribed();
    const jobId = await generate(account, ['a lighthouse', 'reject this one']);
    await until(() => receiver.received.length >= 1);
    const [delivery] = receiver.received;
    expect(delivery.verified, delivery.error).toBe(true);
    expect(delivery.id).toMatch(/^msg_/);
    expect(delivery.body!.type).toBe('job.completed');
    const job = await (await api(account, 'GET', `/api/playground/images/${jobId}`)).json();
    expect(delivery.body!.data).toMatchObject({ ...job, images: job.images.map((i: any) => ({ ...i, url: i.url ? expect.any(String) : null })) });
    expect(new Date(delivery.body!.timestamp).toISOString()).toBe(job.completedAt);
    // Once: a sweep runs every second; give it two chances to publish or send again.
    await t.services.imageJobs.webhooks.sweeper.sweep(new Date(Date.now() + 60_000));
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.received.filter((r) => r.body?.data.jobId === jobId)).toHaveLength(1);
  });

  it('job.failed: every image failed; an endpoint not subscribed to it hears nothing', async () => {
    const { account, receiver } = await subscribed(['job.failed']);
    const other = await startReceiver();
    receivers.push(other);
    const res = await api(account, 'POST', '/api/webhooks', { url: other.url, events: ['job.completed'] });
    other.secret = ((await res.json()) as { secret: string }).secret;
    const jobId = await generate(account, ['reject a', 'reject b']);
    await until(() => receiver.received.length >= 1);
    expect(receiver.received[0].verified).toBe(true);
    expect(receiver.received[0].body).toMatchObject({ type: 'job.failed', data: { jobId, status: 'failed', failedImages: 2, creditsRefunded: 2 } });
    const completed = await generate(account, ['fine']);
    await until(() => other.received.length >= 1);
    expect(other.received.map((r) => r.body?.data.jobId)).toEqual([completed]);
    expect(receiver.received).toHaveLength(1);
  });

  it('credits.low: once per crossing, re-armed when the balance is back at or above the threshold', async () => {
    const { account, receiver } = await subscribed(['credits.low'], 12);
    await generate(account, ['one', 'two']); // 12 → 10: not below
    await generate(account, ['three']); // 10 → 9: crosses
    await until(() => receiver.received.length >= 1);
    expect(receiver.received[0].verified).toBe(true);
    expect(receiver.received[0].body).toMatchObject({ type: 'credits.low', data: { credits: 9, threshold: 10 } });
    await generate(account, ['four']); // 9 → 8: no new crossing
    await t.services.credits.grant(account.accountId, 5, `grant-${Date.now()}`, { actor: 'test', ip: null, host: 'test' }); // 13: re-armed
    await generate(account, ['five', 'six', 'seven', 'eight']); // 13 → 9: crosses again
    await until(() => receiver.received.length >= 2);
    expect(receiver.received[1].body).toMatchObject({ type: 'credits.low', data: { credits: 9, threshold: 10 } });
    expect(receiver.received[1].id).not.toBe(receiver.received[0].id);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.received).toHaveLength(2);
  });

  it('credits.low under concurrent charges: one event for one crossing', async () => {
    const { account, receiver } = await subscribed(['credits.low'], 20);
    await Promise.all(Array.from({ length: 20 }, (_, i) => generate(account, [`p${i}`])));
    await until(() => receiver.received.length >= 1);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0].body!.data.threshold).toBe(10);
    expect(receiver.received[0].body!.data.credits).toBeLessThan(10);
  });
});

describe('retries', () => {
  it('the same webhook-id on every retry, spaced at least as the schedule says', async () => {
    const { account, receiver } = await subscribed(['job.completed']);
    receiver.answer = (_r, n) => (n < 3 ? 503 : 200);
    await generate(account, ['retry me']);
    await until(() => receiver.received.length >= 4);
    const ids = new Set(receiver.received.map((r) => r.id));
    expect(ids.size).toBe(1);
    expect(receiver.received.every((r) => r.verified)).toBe(true);
    expect(receiver.received.map((r) => r.statusCode)).toEqual([503, 503, 503, 200]);
    for (let i = 1; i < 4; i++) {
      expect(receiver.received[i].receivedAt - receiver.received[i - 1].receivedAt).toBeGreaterThanOrEqual(SCHEDULE_MS[i - 1]);
    }
    // Acknowledged: nothing more comes.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(receiver.received).toHaveLength(4);
  });

  it('gives up after the last scheduled retry', async () => {
    const { account, receiver } = await subscribed(['job.completed']);
    receiver.answer = () => 500;
    await generate(account, ['never acknowledged']);
    await until(() => receiver.received.length >= SCHEDULE_MS.length + 1);
    await until(async () => (await t.services.webhooks.recentDeliveries(account.accountId))[0]?.status === 'failed');
    await new Promise((r) => setTimeout(r, 2_000));
    expect(receiver.received).toHaveLength(SCHEDULE_MS.length + 1);
  });

  it('a 410 disables the endpoint: no retry, and later events are not sent', async () => {
    const { account, receiver } = await subscribed(['job.completed']);
    receiver.answer = () => 410;
    await generate(account, ['gone']);
    await until(() => receiver.received.length >= 1);
    await until(async () => ((await (await api(account, 'GET', '/api/webhooks')).json()) as any).webhooks[0].disabledAt !== null);
    await generate(account, ['after']);
    await new Promise((r) => setTimeout(r, 2_000));
    expect(receiver.received).toHaveLength(1);
  });

  it('a job made final without its event published (a crash in between) is published by the sweep', async () => {
    const { account, receiver } = await subscribed(['job.completed']);
    const jobId = await generate(account, ['swept']);
    await until(() => receiver.received.length >= 1);
    // Put the job back as a crash right after its final update would leave it.
    await t.connection.db!.collection('jobs').updateOne({ _id: jobId as never }, { $set: { eventPending: true } });
    await t.connection.db!.collection('webhookDeliveries').deleteMany({ accountId: account.accountId });
    const report = await t.services.imageJobs.webhooks.sweeper.sweep(new Date(Date.now() + 60_000));
    expect(report.jobEvents).toBe(1);
    await until(() => receiver.received.length >= 2);
    expect(receiver.received[1].id).toBe(receiver.received[0].id);
  });

  it('job.canceled: a job canceled over REST is announced once its running image ends, with the job as GET returns it', async () => {
    const { account, receiver } = await subscribed(['job.canceled', 'job.completed']);
    const prompts = ['hold the first', ...Array.from({ length: 30 }, (_, i) => `queued ${i}`)];
    const jobId = await generate(account, prompts);
    await until(() => images.held.has('hold the first'));
    const canceled = await api(account, 'POST', `/api/playground/images/${jobId}/cancel`);
    expect(canceled.status).toBe(200);
    images.held.get('hold the first')!();
    await until(() => receiver.received.length >= 1);
    expect(receiver.received[0].verified).toBe(true);
    expect(receiver.received[0].body).toMatchObject({ type: 'job.canceled', data: { jobId, status: 'canceled' } });
    const job = (await (await api(account, 'GET', `/api/playground/images/${jobId}`)).json()) as any;
    expect((receiver.received[0].body as any).data.creditsRefunded).toBe(job.creditsRefunded);
  });

  it('job.canceled needs only the status: a job stored as canceled (cancellation lands separately) is announced as such', async () => {
    const { account, receiver } = await subscribed(['job.canceled']);
    const jobId = await generate(account, ['to be canceled']);
    // Completed, and its job.completed published (nothing sent: this endpoint wants job.canceled only).
    await until(async () => {
      const job = await t.connection.db!.collection('jobs').findOne({ _id: jobId as never });
      return job?.status === 'completed' && job.eventPending === undefined;
    });
    // What a cancel's guarded update leaves: the final status, the event still pending.
    await t.connection.db!.collection('jobs').updateOne({ _id: jobId as never }, { $set: { status: 'canceled', eventPending: true, updatedAt: new Date() } });
    expect(receiver.received).toHaveLength(0);
    await t.services.imageJobs.webhooks.publisher.publishJob(jobId);
    await until(() => receiver.received.length >= 1);
    expect(receiver.received[0].verified).toBe(true);
    expect(receiver.received[0].body).toMatchObject({ type: 'job.canceled', data: { jobId, status: 'canceled' } });
  });
});
