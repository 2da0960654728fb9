import mongoose, { type Connection } from 'mongoose';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { openTestImageJobs } from './image-jobs.js';
import { MemoryCredits } from './memory-fakes.js';
import { until } from '../helpers/until.js';

// The queue and worker in one process against the real (embedded) database, without HTTP.
let connection: Connection;
let jobs: Awaited<ReturnType<typeof openTestImageJobs>>;
let worker: RunningWorker;
const credits = new MemoryCredits();
const principal = { accountId: 'd'.repeat(24), keyId: 'e'.repeat(24) };
const silent = { info() {}, warn() {}, error() {} };
const POLL_MS = 120_000;

beforeAll(async () => {
  const uri = new URL(inject('mongoUri'));
  uri.pathname = `/images_queue_${process.pid}`;
  connection = await mongoose.createConnection(uri.toString(), { serverSelectionTimeoutMS: 5000 }).asPromise();
  // The backstop poll is slower than any test here may take: work starts only because enqueues wake the worker.
  const config = loadConfig({ JOB_LOCK_LIFETIME_MS: '5000', WORKER_CONCURRENCY: '4', QUEUE_POLL_INTERVAL_MS: String(POLL_MS) });
  credits.balances.set(principal.accountId, 100);
  jobs = await openTestImageJobs(config, connection, credits);
  worker = await startImageWorker({
    queue: jobs.queue,
    runner: jobs.runner,
    sweeper: jobs.sweeper,
    concurrency: 4,
    lockLifetimeMs: 5000,
    sweepIntervalMs: 60_000,
    log: silent,
  });
});

afterAll(async () => {
  await worker?.stop(10_000);
  await connection?.dropDatabase().catch(() => undefined);
  await connection?.close();
});

async function waitFinal(jobId: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = await jobs.service.get(principal, jobId, { baseUrl: 'http://t' });
    if (job.status === 'completed' || job.status === 'failed') return job;
    if (Date.now() > deadline) throw new Error(`job still ${job.status}: ${JSON.stringify(job.images.map((i) => i.status))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Agenda image queue with an in-process worker', () => {
  it('generates every image of a job and stores it', async () => {
    const created = await jobs.service.create(principal, ['a lighthouse', 'a teapot', 'a comet']);
    const job = await waitFinal(created.jobId);
    expect(job).toMatchObject({ status: 'completed', succeededImages: 3, failedImages: 0 });
    const record = await jobs.store.findById(created.jobId);
    for (const img of record!.images) {
      expect(img.attempt).toBe(1);
      const file = await jobs.images.get(img.fileId!);
      expect(file!.contentType).toBe('image/png');
      expect(file!.data.subarray(1, 4).toString()).toBe('PNG');
    }
    // Finished entries leave the queue (Agenda removes an entry once its handler has returned, which
    // can be just after the job is final).
    await until(async () => (await jobs.queue.queuedIndexes(created.jobId)).size === 0, 'the queue entries removed');
  });

  it('starts work soon after enqueue (no poll wait)', async () => {
    const started = Date.now();
    const created = await jobs.service.create(principal, ['quick']);
    await waitFinal(created.jobId);
    const record = await jobs.store.findById(created.jobId);
    // Not a speed target: a quarter of the poll interval is far beyond any wake-up, on any machine.
    expect(record!.images[0].startedAt!.getTime() - started).toBeLessThan(POLL_MS / 4);
  });

  it('requeues an image whose queue entry vanished (sweep)', async () => {
    await worker.stop(10_000);
    const created = await jobs.service.create(principal, ['orphan 1', 'orphan 2']);
    await connection.db!.collection('agendaJobs').deleteMany({ 'data.jobId': created.jobId, 'data.index': 1 });
    expect([...(await jobs.queue.queuedIndexes(created.jobId))]).toEqual([0]);
    const report = await jobs.sweeper.sweep(new Date(Date.now() + 10_000));
    expect(report.requeued).toBe(1);
    expect([...(await jobs.queue.queuedIndexes(created.jobId))].sort()).toEqual([0, 1]);
  });
});
