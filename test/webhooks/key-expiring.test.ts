// `key.expiring` end to end: the workers' key sweep publishes it once per key and expiry, when the
// expiry is 7 days away or nearer; deliveries verified by a real receiver (standardwebhooks).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from './receiver.js';

const actor = { actor: 'test', ip: '127.0.0.1', host: 'test-host' };
let t: TestApp;
let worker: RunningWorker;
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', JOB_SWEEP_INTERVAL_MS: '1000' });
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
});
afterAll(async () => {
  await worker?.stop(5_000);
  await t?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function subscribed(account: TestAccount, events?: string[]): Promise<Receiver> {
  const receiver = await startReceiver();
  receivers.push(receiver);
  const res = await fetch(`${t.baseUrl}/api/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, ...(events ? { events } : {}) }),
  });
  expect(res.status).toBe(201);
  receiver.secret = ((await res.json()) as any).secret;
  return receiver;
}

const DAY = 86_400_000;

describe('key.expiring', () => {
  it('is sent once for a key created already within 7 days of its expiry, and once more after an edit moves it', async () => {
    const account = await t.createAccountWithKey({ credits: 1 });
    const receiver = await subscribed(account);
    const expiresAt = new Date(Date.now() + 3 * DAY);
    const near = await t.services.keys.create(account.accountId, 'deploy key', actor, { expiresAt });
    const far = await t.services.keys.create(account.accountId, 'far key', actor, { expiresAt: new Date(Date.now() + 30 * DAY) });
    await until(() => receiver.received.some((r) => r.body?.type === 'key.expiring'), 'key.expiring arrives');
    const first = receiver.received.find((r) => r.body?.type === 'key.expiring')!;
    expect(first.verified).toBe(true);
    expect(first.body!.data).toEqual({ id: near.id, name: 'deploy key', prefix: near.prefix, expiresAt: expiresAt.toISOString() });
    // Later sweeps send nothing more for it (nor for the key 30 days away).
    const sweeps = await t.services.imageJobs.keys!.sweep();
    expect(sweeps.expiring).toBe(0);
    expect(receiver.received.filter((r) => r.body?.type === 'key.expiring').map((r) => r.body!.data.id)).toEqual([near.id]);
    // Moving the far key's expiry within the week announces it, once.
    const moved = new Date(Date.now() + 2 * DAY);
    await t.services.keys.update(far.id, { expiresAt: moved }, actor);
    await until(() => receiver.received.some((r) => r.body?.type === 'key.expiring' && r.body.data.id === far.id), 'the edited key is announced');
    expect(await t.services.imageJobs.keys!.sweep()).toMatchObject({ expiring: 0 });
    expect(receiver.received.filter((r) => r.body?.type === 'key.expiring')).toHaveLength(2);
  });

  it('is an event endpoints can choose, and not sent to those that did not', async () => {
    const account = await t.createAccountWithKey({ credits: 1 });
    const jobsOnly = await subscribed(account, ['job.completed']);
    const keysOnly = await subscribed(account, ['key.expiring']);
    await t.services.keys.create(account.accountId, 'short', actor, { expiresAt: new Date(Date.now() + DAY) });
    await until(() => keysOnly.received.length > 0, 'the key.expiring subscriber hears it');
    expect(keysOnly.received[0]!.body!.type).toBe('key.expiring');
    expect(jobsOnly.received).toEqual([]);
  });
});
