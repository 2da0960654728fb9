import { beforeEach, describe, expect, it, vi } from 'vitest';
import { AppError } from '../../src/domain/errors.js';
import { ImageRunner } from '../../src/domain/jobs/runner.js';
import { ImageJobs } from '../../src/domain/jobs/service.js';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { JobSweeper } from '../../src/domain/jobs/sweep.js';
import { parsePrompts } from '../../src/domain/jobs/validation.js';
import { ProviderError, type ImageProvider } from '../../src/providers/images/types.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { MemoryCredits, MemoryImageStore, MemoryJobStore, MemoryQueue } from './memory-fakes.js';

const limits = { maxPrompts: 50, maxPromptLength: 2000 };
const alice = { accountId: 'a'.repeat(24), keyId: 'k'.repeat(24) };
const bob = { accountId: 'b'.repeat(24), keyId: 'j'.repeat(24) };
const ctx = { baseUrl: 'http://gw.test' };

function expectInvalid(input: unknown, field: string, message: string) {
  try {
    parsePrompts(input, limits);
    expect.fail('expected a validation error');
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: 'invalid_request', field, message });
  }
}

describe('prompt validation (contract texts and order)', () => {
  it('names the field and the rule', () => {
    expectInvalid(undefined, 'prompts', 'prompts is required');
    expectInvalid(null, 'prompts', 'prompts is required');
    expectInvalid('a cat', 'prompts', 'prompts must be an array of strings');
    expectInvalid({}, 'prompts', 'prompts must be an array of strings');
    expectInvalid([], 'prompts', 'prompts must not be empty');
    expectInvalid(Array(51).fill('x'), 'prompts', 'prompts must have at most 50 entries (got 51)');
    expectInvalid(['ok', 3], 'prompts[1]', 'prompts[1] must be a string');
    expectInvalid(['ok', '   \n'], 'prompts[1]', 'prompts[1] must not be empty');
    expectInvalid(['x'.repeat(2001)], 'prompts[0]', 'prompts[0] must be at most 2000 characters (got 2001)');
  });

  it('accepts the limits exactly, trims, and counts characters not code units', () => {
    expect(parsePrompts(Array(50).fill(' a '), limits)).toEqual(Array(50).fill('a'));
    expect(parsePrompts(['x'.repeat(2000)], limits)[0]).toHaveLength(2000);
    expect(parsePrompts(['🦊'.repeat(2000)], limits)).toHaveLength(1);
    expect(() => parsePrompts(['x'.repeat(11)], { maxPrompts: 2, maxPromptLength: 10 })).toThrow(/at most 10 characters/);
  });
});

class ScriptedProvider implements ImageProvider {
  readonly name = 'scripted';
  readonly offer = BUILTIN_OFFER;
  calls: string[] = [];
  async generate(prompt: string) {
    this.calls.push(prompt);
    if (prompt.startsWith('reject')) throw new ProviderError('provider_rejected', 'Image provider rejected the request (HTTP 400)');
    if (prompt.startsWith('flaky')) throw new ProviderError('provider_server_error', 'Image provider failed (HTTP 503)');
    if (prompt.startsWith('boom')) throw new Error('disk on fire');
    return { data: Buffer.from(`png:${prompt}`), contentType: 'image/png' };
  }
}

describe('image jobs', () => {
  let jobs: MemoryJobStore;
  let credits: MemoryCredits;
  let queue: MemoryQueue;
  let images: MemoryImageStore;
  let provider: ScriptedProvider;
  let service: ImageJobs;
  let runner: ImageRunner;
  let sweeper: JobSweeper;
  const signer = new ImageUrlSigner('x'.repeat(40), 3600);

  beforeEach(() => {
    jobs = new MemoryJobStore();
    credits = new MemoryCredits();
    credits.balances.set(alice.accountId, 10);
    credits.balances.set(bob.accountId, 10);
    queue = new MemoryQueue();
    images = new MemoryImageStore();
    provider = new ScriptedProvider();
    service = new ImageJobs({ jobs, credits, queue, signer, limits, offer: BUILTIN_OFFER });
    runner = new ImageRunner({ jobs, credits, provider, images, lockLifetimeMs: 1000, maxAttempts: 3 });
    sweeper = new JobSweeper({ jobs, credits, queue, runner, lockLifetimeMs: 1000, unchargedGraceMs: 60_000 });
  });

  async function drain() {
    for (let e = queue.take(); e; e = queue.take()) {
      const out = await runner.run(e.jobId, e.index);
      if (out.kind === 'retry') await queue.enqueue(e.jobId, [e.index]);
    }
  }

  it('creates a charged, queued job with one queue entry per prompt', async () => {
    const created = await service.create(alice, ['a fox', 'a whale', 'a moth']);
    expect(created).toMatchObject({ totalImages: 3, creditsUsed: 3, credits: 7 });
    expect(queue.entries.map((e) => e.index)).toEqual([0, 1, 2]);
    const view = await service.get(alice, created.jobId, ctx);
    expect(view).toMatchObject({ status: 'queued', totalImages: 3, succeededImages: 0, completedAt: null });
    expect(view.images.map((i) => [i.index, i.prompt, i.status, i.url])).toEqual([
      [0, 'a fox', 'queued', null],
      [1, 'a whale', 'queued', null],
      [2, 'a moth', 'queued', null],
    ]);
  });

  it('402 charges nothing, stores nothing, queues nothing', async () => {
    await expect(service.create(alice, Array(11).fill('p'))).rejects.toMatchObject({ code: 'insufficient_credits' });
    expect(credits.balances.get(alice.accountId)).toBe(10);
    expect(jobs.docs.size).toBe(0);
    expect(queue.entries).toHaveLength(0);
  });

  it('validates before charging', async () => {
    await expect(service.create(alice, [''])).rejects.toMatchObject({ code: 'invalid_request', field: 'prompts[0]' });
    expect(credits.balances.get(alice.accountId)).toBe(10);
  });

  it('hides another account’s job, unknown and malformed ids alike', async () => {
    const { jobId } = await service.create(alice, ['mine']);
    for (const id of [jobId, '00000000-0000-4000-8000-000000000000', 'nope', 42, null, `${jobId}x`]) {
      await expect(service.get(bob, id, ctx)).rejects.toMatchObject({ code: 'job_not_found', message: 'Job not found' });
    }
    expect(await service.getMany(bob, [jobId], ctx)).toEqual([null]);
    expect((await service.get(alice, jobId.toUpperCase(), ctx)).jobId).toBe(jobId);
  });

  it('runs images to completion with signed URLs', async () => {
    const { jobId } = await service.create(alice, ['a fox', 'a whale']);
    await drain();
    const view = await service.get(alice, jobId, ctx);
    expect(view).toMatchObject({ status: 'completed', succeededImages: 2, failedImages: 0, creditsRefunded: 0 });
    expect(view.completedAt).toBeInstanceOf(Date);
    for (const img of view.images) {
      expect(img.status).toBe('succeeded');
      const u = new URL(img.url!);
      expect(u.origin).toBe('http://gw.test');
      expect(signer.verify(jobId, img.index, u.searchParams.get('expires'), u.searchParams.get('sig'))).toBe('valid');
    }
    expect(images.files.size).toBe(2);
  });

  it('refunds a rejected image exactly once, even when runs and sweeps race', async () => {
    const { jobId } = await service.create(alice, ['ok', 'reject me']);
    expect(credits.balances.get(alice.accountId)).toBe(8);
    // Duplicate queue entries for the same image: the second run finds nothing to claim.
    await queue.enqueue(jobId, [1, 1]);
    await drain();
    await Promise.all([sweeper.sweep(new Date(Date.now() + 5000)), sweeper.sweep(new Date(Date.now() + 5000))]);
    const view = await service.get(alice, jobId, ctx);
    expect(view).toMatchObject({ status: 'completed', succeededImages: 1, failedImages: 1, creditsRefunded: 1 });
    expect(view.images[1]).toMatchObject({ status: 'failed', url: null, error: 'Image provider rejected the request (HTTP 400)' });
    expect(credits.balances.get(alice.accountId)).toBe(9);
    expect(credits.refunds).toEqual([{ accountId: alice.accountId, opId: `refund:${jobId}:1` }]);
    expect(provider.calls.filter((p) => p === 'reject me')).toHaveLength(1);
  });

  it('a job whose every image failed is failed, and fully refunded', async () => {
    const { jobId } = await service.create(alice, ['reject 1', 'reject 2']);
    await drain();
    expect(await service.get(alice, jobId, ctx)).toMatchObject({ status: 'failed', failedImages: 2, creditsRefunded: 2 });
    expect(credits.balances.get(alice.accountId)).toBe(10);
  });

  it('retries retryable failures up to the attempt limit, then fails and refunds', async () => {
    const { jobId } = await service.create(alice, ['flaky forever']);
    await drain();
    expect(provider.calls).toEqual(['flaky forever', 'flaky forever', 'flaky forever']);
    const job = jobs.docs.get(jobId)!;
    expect(job.images[0]).toMatchObject({ status: 'failed', attempt: 3, refund: 'done' });
    expect(job.status).toBe('failed');
  });

  it('gives an image back on an infrastructure fault', async () => {
    const { jobId } = await service.create(alice, ['boom']);
    const e = queue.take()!;
    await expect(runner.run(e.jobId, e.index)).rejects.toThrow('disk on fire');
    expect(jobs.docs.get(jobId)!.images[0]).toMatchObject({ status: 'queued', attempt: 1 });
  });

  it('does not run an image twice while its attempt is alive, and takes it over once stale', async () => {
    const { jobId } = await service.create(alice, ['slow']);
    const now = new Date();
    // A first worker claimed it and died without finishing.
    expect(await jobs.claimImage(jobId, 0, now, new Date(now.getTime() - 1000), now)).not.toBeNull();
    const busy = await runner.run(jobId, 0);
    expect(busy.kind).toBe('busy');
    expect(provider.calls).toHaveLength(0);
    // Its heartbeat goes stale: the next run takes over with attempt 2; the dead attempt can no longer complete.
    jobs.docs.get(jobId)!.images[0].heartbeatAt = new Date(Date.now() - 5000);
    expect(await runner.run(jobId, 0)).toEqual({ kind: 'succeeded' });
    expect(await jobs.completeImage(jobId, 0, 1, stored('late'), new Date())).toBeNull();
    expect(jobs.docs.get(jobId)!).toMatchObject({ status: 'completed', succeededImages: 1 });
  });

  it('stops retrying an image whose attempts keep dying', async () => {
    const { jobId } = await service.create(alice, ['poison']);
    jobs.docs.get(jobId)!.images[0].attempt = 3;
    expect(await runner.run(jobId, 0)).toMatchObject({ kind: 'failed' });
    expect(jobs.docs.get(jobId)!).toMatchObject({ status: 'failed', creditsRefunded: 1 });
    expect(provider.calls).toHaveLength(0);
  });

  it('sweep: withdraws a crashed create — voids its charge, or gives it back when it applied — never finishes it', async () => {
    // The request's own withdrawal fails too (the database is gone), so the sweep must do it.
    const withdrawals = vi.spyOn(credits, 'voidOp').mockRejectedValueOnce(new Error('connection reset'));
    credits.failNextCharge = new Error('connection reset');
    await expect(service.create(alice, ['lost'])).rejects.toThrow('connection reset');
    const [orphan] = [...jobs.docs.values()];
    expect(orphan.charged).toBe(false);
    await expect(service.get(alice, orphan.id, ctx)).rejects.toMatchObject({ code: 'job_not_found' });
    // Too young: left alone.
    expect((await sweeper.sweep()).voided).toBe(0);
    expect((await sweeper.sweep(new Date(Date.now() + 61_000))).voided).toBe(1);
    expect(jobs.docs.size).toBe(0);
    expect(credits.balances.get(alice.accountId)).toBe(10);

    // The charge applied but the request died before accepting the job: the client got an error, so
    // the credits come back and no image is generated.
    withdrawals.mockRejectedValueOnce(new Error('connection reset'));
    vi.spyOn(jobs, 'markCharged').mockRejectedValueOnce(new Error('connection reset'));
    await expect(service.create(alice, ['paid'])).rejects.toThrow('connection reset');
    const [paid] = [...jobs.docs.values()];
    expect(credits.balances.get(alice.accountId)).toBe(9);
    queue.entries.length = 0;
    const report = await sweeper.sweep(new Date(Date.now() + 61_000));
    expect(report).toMatchObject({ voided: 0, refunded: 1 });
    expect(credits.balances.get(alice.accountId)).toBe(10);
    expect(queue.entries).toEqual([]);
    expect(jobs.docs.has(paid.id)).toBe(false);
    // A second sweep (or a concurrent one) finds nothing left to give back.
    expect(await sweeper.sweep(new Date(Date.now() + 61_000))).toMatchObject({ voided: 0, refunded: 0 });
    expect(credits.balances.get(alice.accountId)).toBe(10);
  });

  it('a create answered with an error withdraws itself at once: never charged, no job left', async () => {
    vi.spyOn(jobs, 'markCharged').mockRejectedValueOnce(new Error('connection reset'));
    await expect(service.create(alice, ['a', 'b'])).rejects.toThrow('connection reset');
    expect(credits.balances.get(alice.accountId)).toBe(10);
    expect(jobs.docs.size).toBe(0);
    expect(queue.entries).toEqual([]);
  });

  it('a failed enqueue after acceptance still answers the job (the sweep queues it), so a retry never pays twice', async () => {
    vi.spyOn(queue, 'enqueue').mockRejectedValueOnce(new Error('connection reset'));
    const created = await service.create(alice, ['late start']);
    expect(created).toMatchObject({ totalImages: 1, credits: 9 });
    expect(queue.entries).toEqual([]);
    const report = await sweeper.sweep(new Date(Date.now() + 120_000));
    expect(report.requeued).toBe(1);
    expect(queue.entries).toEqual([{ jobId: created.jobId, index: 0 }]);
  });

  it('settles the charge once the job records it, and each refund once the job records that', async () => {
    const { jobId } = await service.create(alice, ['ok', 'reject me']);
    expect(credits.settled).toEqual([`job:${jobId}`]);
    expect(credits.ops.get(alice.accountId)).toEqual(new Set());
    await drain();
    expect(credits.refunds).toEqual([{ accountId: alice.accountId, opId: `refund:${jobId}:1` }]);
    expect(credits.settled).toEqual([`job:${jobId}`, `refund:${jobId}:1`]);
    expect(credits.ops.get(alice.accountId)).toEqual(new Set());
  });

  it('sweep: settles a refund left pending and finalizes the job', async () => {
    const { jobId } = await service.create(alice, ['x']);
    const now = new Date();
    const claimed = await jobs.claimImage(jobId, 0, now, now, now);
    await jobs.failImage(jobId, 0, claimed!.image.attempt, 'crashed before refund', now);
    const report = await sweeper.sweep(new Date(Date.now() + 5000));
    expect(report).toMatchObject({ refundsSettled: 1 });
    expect(jobs.docs.get(jobId)).toMatchObject({ status: 'failed', creditsRefunded: 1 });
    expect(credits.balances.get(alice.accountId)).toBe(10);
  });

  it('sweep: requeues images whose queue entry vanished, and only those', async () => {
    const { jobId } = await service.create(alice, ['a', 'b', 'c']);
    queue.entries.splice(0, 2); // entries of images 0 and 1 lost
    const report = await sweeper.sweep(new Date(Date.now() + 5000));
    expect(report.requeued).toBe(2);
    expect(queue.entries.map((e) => e.index).sort()).toEqual([0, 1, 2]);
    await drain();
    expect((await service.get(alice, jobId, ctx)).status).toBe('completed');
  });

  it('lists newest first with a cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await service.create(alice, [`p${i}`])).jobId);
      await new Promise((r) => setTimeout(r, 2));
    }
    await service.create(bob, ['not alice']);
    const p1 = await service.list(alice, { first: 2 }, ctx);
    const p2 = await service.list(alice, { first: 2, after: p1.nextCursor }, ctx);
    const p3 = await service.list(alice, { first: 2, after: p2.nextCursor }, ctx);
    expect([...p1.items, ...p2.items, ...p3.items].map((j) => j.jobId)).toEqual(ids.reverse());
    expect(p3.nextCursor).toBeNull();
    await expect(service.list(alice, { first: 0 }, ctx)).rejects.toMatchObject({ field: 'first' });
    await expect(service.list(alice, { first: 2, after: 'garbage' }, ctx)).rejects.toMatchObject({ field: 'after' });
  });
});

/** What a run records of stored bytes, for store-level tests. */
function stored(fileId: string) {
  return { fileId, contentType: 'image/png', width: 256, height: 256 };
}
