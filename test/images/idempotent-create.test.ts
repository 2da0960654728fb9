import { describe, expect, it } from 'vitest';
import { until } from '../helpers/until.js';
import { answerOf, Idempotency } from '../../src/domain/idempotency/service.js';
import { ImageJobs } from '../../src/domain/jobs/service.js';
import { ImageRunner } from '../../src/domain/jobs/runner.js';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { JobSweeper } from '../../src/domain/jobs/sweep.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { MemoryIdempotencyStore } from '../gateway/memory-fakes.js';
import { MemoryCredits, MemoryImageStore, MemoryJobStore, MemoryQueue } from './memory-fakes.js';

/**
 * Issue 19, item 9: a keyed create answered with an error (the database failed mid-request) and retried
 * with its Idempotency-Key must leave at most one charged job, and the retry's 2xx names that job.
 * Every store call of the create path (idempotency record, job, credits, queue) fails in turn: before
 * it applies or after (the reply lost), alone or with the database staying down for the rest of the
 * attempt. The client retries until it gets an answer; the sweep runs between attempts.
 */

const alice = { accountId: 'a'.repeat(24), keyId: 'k'.repeat(24) };
const PROMPTS = ['a fox', 'a whale'];
const START = 10;

class DatabaseDown extends Error {
  constructor() {
    super('connection reset (database killed)');
  }
}

/** Fails the `failAt`-th store call of an attempt; `outage`: and every call after it in that attempt. */
class FaultPlan {
  calls = 0;
  failAt = Number.POSITIVE_INFINITY;
  applied = false;
  outage = false;
  private down = false;

  reset(failAt = Number.POSITIVE_INFINITY) {
    Object.assign(this, { calls: 0, failAt, down: false });
  }

  wrap<T extends object>(target: T): T {
    return new Proxy(target, {
      get: (obj, prop, receiver) => {
        const value = Reflect.get(obj, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          if (this.down) throw new DatabaseDown();
          const call = ++this.calls;
          if (call !== this.failAt) return (value as (...a: unknown[]) => unknown).apply(obj, args);
          if (this.outage) this.down = true;
          if (this.applied) await (value as (...a: unknown[]) => unknown).apply(obj, args);
          throw new DatabaseDown();
        };
      },
    });
  }
}

function world() {
  const plan = new FaultPlan();
  const clock = { now: Date.now() };
  const jobs = new MemoryJobStore();
  const credits = new MemoryCredits();
  credits.balances.set(alice.accountId, START);
  const queue = new MemoryQueue();
  const idemStore = new MemoryIdempotencyStore();
  const limits = { maxPrompts: 50, maxPromptLength: 2000 };
  const signer = new ImageUrlSigner('x'.repeat(40), 3600);
  const service = new ImageJobs({ jobs: plan.wrap(jobs), credits: plan.wrap(credits), queue: plan.wrap(queue), signer, limits, offer: BUILTIN_OFFER });
  const idempotency = new Idempotency({ store: plan.wrap(idemStore), now: () => new Date(clock.now) });
  const provider = { name: 'ok', offer: BUILTIN_OFFER, generate: async (prompt: string) => ({ data: Buffer.from(`png:${prompt}`), contentType: 'image/png' }) };
  const runner = new ImageRunner({ jobs, credits, provider, images: new MemoryImageStore(), lockLifetimeMs: 1000, maxAttempts: 3 });
  const sweeper = new JobSweeper({ jobs, credits, queue, runner, lockLifetimeMs: 1000, unchargedGraceMs: 60_000 });
  const create = () => idempotency.run(alice, 'order-42', 'generate', PROMPTS, (request) => service.create(alice, PROMPTS, request));
  /** Runs every queued image, as workers would; the sweep first requeues what a failed enqueue lost. */
  const drain = async () => {
    await sweeper.sweep(new Date(Date.now() + 120_000));
    for (let e = queue.take(); e; e = queue.take()) await runner.run(e.jobId, e.index);
  };
  return { plan, clock, jobs, credits, queue, sweeper, create, drain };
}

/** Calls one clean create makes to the stores (so every one of them gets its turn to fail). */
async function callsOfOneCreate(): Promise<number> {
  const w = world();
  await w.create();
  return w.plan.calls;
}

describe('a keyed create that failed mid-way and was retried with its key', async () => {
  const steps = await callsOfOneCreate();
  const cases = [];
  for (let failAt = 1; failAt <= steps; failAt++) {
    for (const applied of [false, true]) for (const outage of [false, true]) cases.push({ failAt, applied, outage });
  }

  it.each(cases)('call $failAt fails (applied: $applied, database stays down: $outage): one charged job, the one the 2xx names', async ({ failAt, applied, outage }) => {
    const w = world();
    Object.assign(w.plan, { applied, outage });
    w.plan.reset(failAt);
    let answer: { jobId: string } | undefined;
    const errors: string[] = [];
    for (let attempt = 0; attempt < 10 && !answer; attempt++) {
      try {
        answer = answerOf(await w.create());
      } catch (err) {
        errors.push((err as Error).message);
        // The database is back; time passes (a lock left by the failed attempt expires), a sweep runs.
        w.plan.reset();
        w.clock.now += 61_000;
        await w.sweeper.sweep(new Date(Date.now() + 120_000));
      }
    }
    expect(answer, `no answer after: ${errors.join(' | ')}`).toBeDefined();
    await w.sweeper.sweep(new Date(Date.now() + 120_000));
    const all = [...w.jobs.docs.values()];
    expect(all.map((j) => ({ id: j.id, charged: j.charged }))).toEqual([{ id: answer!.jobId, charged: true }]);
    expect(w.credits.balances.get(alice.accountId)).toBe(START - PROMPTS.length);
    // A later retry with the key replays the same job and charges nothing more.
    expect(answerOf(await w.create()).jobId).toBe(answer!.jobId);
    // The job runs to the end, and what was charged is exactly its images.
    await w.drain();
    const [done] = [...w.jobs.docs.values()];
    expect(done).toMatchObject({ status: 'completed', succeededImages: PROMPTS.length, creditsUsed: PROMPTS.length, creditsRefunded: 0 });
    expect(w.credits.balances.get(alice.accountId)).toBe(START - PROMPTS.length);
  });

  it('a retry that finds the earlier attempt still unaccepted withdraws it first: that attempt can no longer be accepted', async () => {
    const w = world();
    // The first attempt stalls after its charge (the database froze), past its lock.
    let resume!: () => void;
    const stalled = new Promise<void>((r) => (resume = r));
    const markCharged = w.jobs.markCharged.bind(w.jobs);
    let firstCall = true;
    w.jobs.markCharged = async (...args) => {
      if (firstCall) {
        firstCall = false;
        await stalled;
      }
      return markCharged(...args);
    };
    const first = w.create().then(
      (r) => ({ ok: true as const, jobId: answerOf(r).jobId }),
      (err: unknown) => ({ ok: false as const, err }),
    );
    await until(() => w.credits.balances.get(alice.accountId) === START - PROMPTS.length);
    w.clock.now += 61_000;
    const retry = await w.create();
    resume();
    expect(await first).toMatchObject({ ok: false });
    const all = [...w.jobs.docs.values()];
    expect(all.map((j) => ({ id: j.id, charged: j.charged }))).toEqual([{ id: answerOf(retry).jobId, charged: true }]);
    expect(w.credits.balances.get(alice.accountId)).toBe(START - PROMPTS.length);
  });
});

describe('a plain create whose acceptance applied but whose reply was lost', () => {
  it('answers with the job (it is accepted and will run), not an error', async () => {
    const w = world();
    const markCharged = w.jobs.markCharged.bind(w.jobs);
    w.jobs.markCharged = async (...args) => {
      await markCharged(...args);
      throw new DatabaseDown();
    };
    const created = await new ImageJobs({ jobs: w.jobs, credits: w.credits, queue: w.queue, signer: new ImageUrlSigner('x'.repeat(40), 3600), limits: { maxPrompts: 50, maxPromptLength: 2000 }, offer: BUILTIN_OFFER }).create(alice, PROMPTS);
    expect(created).toMatchObject({ totalImages: 2, creditsUsed: 2, credits: START - 2 });
    expect(w.jobs.docs.get(created.jobId)?.charged).toBe(true);
    expect(w.queue.entries.map((e) => e.jobId)).toEqual([created.jobId, created.jobId]);
  });
});
