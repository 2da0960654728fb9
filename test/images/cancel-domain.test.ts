import { beforeEach, describe, expect, it } from 'vitest';
import { ImageRunner } from '../../src/domain/jobs/runner.js';
import { ImageJobs } from '../../src/domain/jobs/service.js';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { JobSweeper } from '../../src/domain/jobs/sweep.js';
import { ProviderError } from '../../src/providers/images/types.js';
import { GatedImageProvider, MemoryCredits, MemoryImageStore, MemoryJobStore, MemoryQueue } from './memory-fakes.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';

// Job cancellation against the in-memory store (same guards as MongoDB): the rules, the races and the
// crash repairs. The doors (REST, GraphQL, console) and a real database are in cancel.test.ts.

const alice = { accountId: 'a'.repeat(24), keyId: 'k'.repeat(24) };
const bob = { accountId: 'b'.repeat(24), keyId: 'j'.repeat(24) };
const ctx = { baseUrl: 'http://gw.test' };
const INITIAL = 100;

let jobs: MemoryJobStore;
let credits: MemoryCredits;
let queue: MemoryQueue;
let provider: GatedImageProvider;
let service: ImageJobs;
let runner: ImageRunner;
let sweeper: JobSweeper;

beforeEach(() => {
  jobs = new MemoryJobStore();
  credits = new MemoryCredits();
  credits.balances.set(alice.accountId, INITIAL);
  credits.balances.set(bob.accountId, INITIAL);
  queue = new MemoryQueue();
  provider = new GatedImageProvider();
  service = new ImageJobs({ jobs, credits, queue, signer: new ImageUrlSigner('x'.repeat(40), 3600), limits: { maxPrompts: 50, maxPromptLength: 2000 }, offer: BUILTIN_OFFER });
  runner = new ImageRunner({ jobs, credits, provider, images: new MemoryImageStore(), lockLifetimeMs: 1000, maxAttempts: 3 });
  sweeper = new JobSweeper({ jobs, credits, queue, runner, lockLifetimeMs: 1000 });
});

/** Runs every queue entry of `jobId` (and retries) to the end. */
async function drain() {
  for (let e = queue.take(); e; e = queue.take()) {
    const out = await runner.run(e.jobId, e.index);
    if (out.kind === 'retry') await queue.enqueue(e.jobId, [e.index]);
  }
}

/** Starts the run of the first queue entry (a held prompt stays mid-flight until released). */
async function startFirst(prompt: string) {
  const e = queue.take()!;
  const run = runner.run(e.jobId, e.index);
  await provider.started(prompt);
  // Wrapped: an async function returning the promise itself would wait for the run to end.
  return { run };
}

const balance = () => credits.balances.get(alice.accountId);
const refundsOf = (jobId: string) => credits.refunds.filter((r) => r.opId.startsWith(`refund:${jobId}:`)).map((r) => r.opId).sort();

describe('cancel', () => {
  it('a queued job: every image canceled and refunded at once, the job canceled; no worker runs its images', async () => {
    const { jobId } = await service.create(alice, ['a', 'b', 'c']);
    expect(balance()).toBe(INITIAL - 3);
    const view = await service.cancel(alice, jobId, ctx);
    expect(view).toMatchObject({ status: 'canceled', creditsRefunded: 3, succeededImages: 0, failedImages: 0 });
    expect(view.completedAt).toBeInstanceOf(Date);
    expect(view.images.map((i) => [i.status, i.url, i.error])).toEqual(Array(3).fill(['canceled', null, null]));
    expect(balance()).toBe(INITIAL);
    expect(refundsOf(jobId)).toEqual([0, 1, 2].map((i) => `refund:${jobId}:${i}`));
    // The queue entries are still there: a worker taking them runs nothing.
    await drain();
    expect(provider.calls).toEqual([]);
    // Idempotent: the same job again, nothing refunded twice.
    expect(await service.cancel(alice, jobId, ctx)).toMatchObject({ status: 'canceled', creditsRefunded: 3 });
    expect(balance()).toBe(INITIAL);
  });

  it('a running job: the image mid-flight finishes and is kept, the others are refunded; the job ends canceled when it does', async () => {
    const { jobId } = await service.create(alice, ['hold 0', 'b', 'c']);
    const { run } = await startFirst('hold 0');
    const view = await service.cancel(alice, jobId, ctx);
    expect(view).toMatchObject({ status: 'running', creditsRefunded: 2, completedAt: null });
    expect(view.images.map((i) => i.status)).toEqual(['running', 'canceled', 'canceled']);
    expect(balance()).toBe(INITIAL - 1);
    // Asked again while it runs: the same answer, nothing more refunded.
    expect(await service.cancel(alice, jobId, ctx)).toMatchObject({ status: 'running', creditsRefunded: 2 });
    provider.release('hold 0');
    expect(await run).toEqual({ kind: 'succeeded' });
    const done = await service.get(alice, jobId, ctx);
    expect(done).toMatchObject({ status: 'canceled', succeededImages: 1, creditsRefunded: 2 });
    expect(done.completedAt).toBeInstanceOf(Date);
    expect(done.images[0]).toMatchObject({ status: 'succeeded', url: expect.stringMatching(/^http:\/\/gw\.test\//) });
    expect(balance()).toBe(INITIAL - 1);
    await drain();
    expect(provider.calls).toEqual(['hold 0']);
  });

  it('a running image that fails after the cancel is refunded too', async () => {
    const { jobId } = await service.create(alice, ['hold 0', 'b']);
    const { run } = await startFirst('hold 0');
    await service.cancel(alice, jobId, ctx);
    provider.release('hold 0', 'reject');
    expect(await run).toMatchObject({ kind: 'failed' });
    expect(await service.get(alice, jobId, ctx)).toMatchObject({ status: 'canceled', failedImages: 1, creditsRefunded: 2 });
    expect(balance()).toBe(INITIAL);
  });

  it('a running image whose provider asks for a retry after the cancel is canceled then, not retried', async () => {
    const { jobId } = await service.create(alice, ['flaky']);
    const e = queue.take()!;
    let cancel: Promise<unknown> | undefined;
    provider.generate = async (prompt) => {
      provider.calls.push(prompt);
      cancel = service.cancel(alice, jobId, ctx);
      await cancel;
      throw new ProviderError('provider_server_error', 'Image provider failed (HTTP 503)');
    };
    expect(await runner.run(e.jobId, e.index)).toEqual({ kind: 'skipped', reason: 'job canceled' });
    expect(await service.get(alice, jobId, ctx)).toMatchObject({ status: 'canceled', creditsRefunded: 1, images: [{ status: 'canceled' }] });
    expect(balance()).toBe(INITIAL);
  });

  it('a finished job is job_finished (409); unknown, malformed and foreign jobs are job_not_found', async () => {
    const done = await service.create(alice, ['a']);
    const failed = await service.create(alice, ['reject']);
    await drain();
    for (const { jobId } of [done, failed]) await expect(service.cancel(alice, jobId, ctx)).rejects.toMatchObject({ code: 'job_finished', httpStatus: 409 });
    const { jobId } = await service.create(alice, ['mine']);
    for (const id of [jobId, '00000000-0000-4000-8000-000000000000', 'nope', 42, null]) {
      await expect(service.cancel(bob, id, ctx)).rejects.toMatchObject({ code: 'job_not_found', message: 'Job not found' });
    }
    expect((await service.get(alice, jobId, ctx)).status).toBe('queued');
    expect(jobs.docs.get(jobId)!.cancelRequestedAt).toBeNull();
  });

  it('refunds stay exact when many cancels race the worker', async () => {
    const seen = { succeeded: 0, failed: 0, canceled: 0, mixed: 0 };
    for (let round = 0; round < 20; round++) {
      const prompts = Array.from({ length: 8 }, (_, i) => (i % 3 === 2 ? `reject ${i}` : `p ${i}`));
      const { jobId } = await service.create(alice, prompts);
      const before = balance()! + prompts.length;
      // The worker and ten cancels interleave at every await; the round decides how far the worker
      // gets before the first cancel lands.
      const ticks = async (n: number) => {
        for (let i = 0; i < n; i++) await Promise.resolve();
      };
      const worker = drain();
      const cancels = Array.from({ length: 10 }, (_, k) => ticks(round * 2 + k).then(() => service.cancel(alice, jobId, ctx)));
      const [, ...answers] = await Promise.allSettled([worker, ...cancels]);
      const job = await service.get(alice, jobId, ctx);
      // A cancel that lands after the job ended is job_finished; once one lands before, the job ends canceled.
      for (const a of answers) if (a.status === 'rejected') expect(a.reason).toMatchObject({ code: 'job_finished' });
      expect(job.status).toBe(answers.some((a) => a.status === 'fulfilled') ? 'canceled' : job.failedImages === 8 ? 'failed' : 'completed');
      const canceled = job.images.filter((i) => i.status === 'canceled').length;
      expect(job.succeededImages + job.failedImages + canceled).toBe(8);
      expect(job.creditsRefunded).toBe(job.failedImages + canceled);
      expect(balance()).toBe(before - job.succeededImages);
      const refunds = refundsOf(jobId);
      expect(refunds).toHaveLength(job.creditsRefunded);
      expect(new Set(refunds).size).toBe(refunds.length);
      seen.succeeded += job.succeededImages;
      seen.failed += job.failedImages;
      seen.canceled += canceled;
      if (canceled > 0 && job.succeededImages + job.failedImages > 0) seen.mixed++;
    }
    // The rounds did race: some images ran (and some of those failed) before the cancels stopped the rest.
    expect(seen.succeeded).toBeGreaterThan(0);
    expect(seen.failed).toBeGreaterThan(0);
    expect(seen.canceled).toBeGreaterThan(0);
    expect(seen.mixed, 'rounds where the cancel landed mid-job').toBeGreaterThan(0);
  });
});

describe('a cancel interrupted by a crash', () => {
  it('the sweep cancels and refunds what it left, and ends the job', async () => {
    const { jobId } = await service.create(alice, ['a', 'b']);
    // The cancel request died right after marking the job.
    await jobs.requestCancel(jobId, alice.accountId, new Date());
    const report = await sweeper.sweep(new Date(Date.now() + 5000));
    expect(report).toMatchObject({ canceled: 2, requeued: 0 });
    expect(await service.get(alice, jobId, ctx)).toMatchObject({ status: 'canceled', creditsRefunded: 2 });
    expect(balance()).toBe(INITIAL);
    expect(await sweeper.sweep(new Date(Date.now() + 5000))).toMatchObject({ canceled: 0, refundsSettled: 0, finalized: 0 });
  });

  it('the sweep settles a refund left pending, and cancels an image whose worker died', async () => {
    const { jobId } = await service.create(alice, ['dies', 'b']);
    const now = new Date();
    expect(await jobs.claimImage(jobId, 0, now, now, now)).not.toBeNull();
    await jobs.requestCancel(jobId, alice.accountId, now);
    // Image 1 canceled, then the crash before its refund.
    expect(await jobs.cancelImage(jobId, 1, null, now)).not.toBeNull();
    const report = await sweeper.sweep(new Date(Date.now() + 5000));
    expect(report).toMatchObject({ refundsSettled: 1, canceled: 1 });
    expect(await service.get(alice, jobId, ctx)).toMatchObject({ status: 'canceled', creditsRefunded: 2, images: [{ status: 'canceled' }, { status: 'canceled' }] });
    expect(balance()).toBe(INITIAL);
    expect(refundsOf(jobId)).toEqual([`refund:${jobId}:0`, `refund:${jobId}:1`]);
  });

  it('a worker that picks up an image of the job finishes the cancel of that image instead of running it', async () => {
    const { jobId } = await service.create(alice, ['a', 'b']);
    await jobs.requestCancel(jobId, alice.accountId, new Date());
    await drain();
    expect(provider.calls).toEqual([]);
    expect(await service.get(alice, jobId, ctx)).toMatchObject({ status: 'canceled', creditsRefunded: 2 });
    expect(balance()).toBe(INITIAL);
  });
});
