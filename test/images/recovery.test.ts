import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { startFakeOpenAi, type FakeOpenAi } from '../fixtures/fake-openai.js';
import { until } from '../helpers/until.js';
import { readJson, spawnWorker, type WorkerProcess } from './worker-process.js';

// Workers dying and stopping: kill -9 mid-image (another worker finishes after the lock expires) and
// SIGTERM (running images finish before exit). A slow fake provider makes sure the signal lands mid-image.
// Short, so the kill -9 test does not wait a minute for the lock to expire; but not so short that a
// worker starved of CPU on a busy machine misses its heartbeats (every third of it) and loses its own
// images to the sweep (a third attempt; a drained image aborted). 2 s did, under load.
const LOCK_MS = 8000;
let t: TestApp;
let fake: FakeOpenAi;
let account: TestAccount;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  fake = await startFakeOpenAi();
  t = await startTestApp({ IN_PROCESS_WORKER: 'false' });
  account = await t.createAccountWithKey({ credits: 50 });
});

afterAll(async () => {
  for (const w of workers) {
    w.kill('SIGKILL');
    await w.exited;
  }
  await t?.close();
  await fake?.close();
});

function startWorker(): WorkerProcess {
  const uri = new URL(t.config.MONGODB_URI!);
  uri.pathname = `/${t.connection.db!.databaseName}`;
  const w = spawnWorker({
    MONGODB_URI: uri.toString(),
    IMAGE_PROVIDER: 'openai',
    IMAGE_API_URL: fake.url,
    IMAGE_RETRIES: '0',
    IMAGE_TIMEOUT_MS: '10000',
    WORKER_CONCURRENCY: '4',
    JOB_LOCK_LIFETIME_MS: String(LOCK_MS),
    JOB_SWEEP_INTERVAL_MS: '1000',
    QUEUE_POLL_INTERVAL_MS: '100',
  });
  workers.push(w);
  return w;
}

async function submit(prompts: string[]): Promise<string> {
  const res = await fetch(`${t.baseUrl}/api/playground/images`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompts }),
  });
  expect(res.status).toBe(201);
  return (await readJson(res)).jobId;
}

async function job(jobId: string) {
  const res = await fetch(`${t.baseUrl}/api/playground/images/${jobId}`, { headers: { authorization: `Bearer ${account.key}` } });
  return readJson(res);
}

/** `until`, with the workers' output in the message when it times out. */
async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>): Promise<T> {
  try {
    return (await until(fn, what, { intervalMs: 50 })) as T;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${workers.map((w) => w.output().slice(-1500)).join('\n---\n')}`);
  }
}

describe('worker failures', () => {
  it('kill -9 mid-image: another worker finishes the job after the lock expires', async () => {
    const first = startWorker();
    await first.ready;
    const prompts = ['[slow:1500] dies with its worker 1', '[slow:1500] dies with its worker 2'];
    const jobId = await submit(prompts);
    await waitFor('both images running', async () => (await job(jobId)).images.every((i: { status: string }) => i.status === 'running'));
    // Kill only once the provider is working on both: mid-image, not between claim and call.
    await waitFor('provider calls', async () => prompts.every((p) => fake.calls.get(p) === 1));
    first.kill('SIGKILL');
    expect(await first.exited).toBeNull();

    const second = startWorker();
    await second.ready;
    const done = await waitFor('job final', async () => {
      const j = await job(jobId);
      return j.status === 'completed' || j.status === 'failed' ? j : undefined;
    });
    expect(done).toMatchObject({ status: 'completed', succeededImages: 2, failedImages: 0, creditsRefunded: 0 });
    const stored = await t.services.imageJobs.store.findById(jobId);
    // Each image: attempt 1 died with the first worker, attempt 2 finished in the second.
    expect(stored!.images.map((i) => i.attempt)).toEqual([2, 2]);
    // The provider saw each prompt twice (the killed call and the retry), never more.
    for (const p of prompts) expect(fake.calls.get(p)).toBe(2);
    expect(await t.connection.db!.collection('images.files').countDocuments({ 'metadata.jobId': jobId })).toBe(2);
    second.kill('SIGTERM');
    expect(await second.exited, second.output().slice(-3000)).toBe(0);
  }, 180_000);

  it('SIGTERM drains: running images finish before the worker exits', async () => {
    const w = startWorker();
    await w.ready;
    const jobId = await submit(['[slow:1000] finishes during shutdown']);
    await waitFor('provider call', async () => fake.calls.get('[slow:1000] finishes during shutdown') === 1);
    w.kill('SIGTERM');
    expect(await w.exited, w.output().slice(-3000)).toBe(0);
    const j = await job(jobId);
    expect(j).toMatchObject({ status: 'completed', succeededImages: 1 });
    expect(fake.calls.get('[slow:1000] finishes during shutdown')).toBe(1);
  }, 120_000);
});
