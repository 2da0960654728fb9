import { describe, expect, it } from 'vitest';
import type { JobChangeFeed, JobRecord } from '../../src/domain/jobs/records.js';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { signedViewing, toJobView } from '../../src/domain/jobs/view.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';
import { isNewer, JobWatcher } from '../../src/domain/jobs/watch.js';
import type { JobView } from '../../src/domain/jobs/types.js';
import type { Principal } from '../../src/domain/principal.js';

/**
 * `jobStatus` never goes back in time (CONTRACT "The GraphQL door"): the watcher pushes a job's state
 * only when it is ahead of the last one pushed, whatever order the events come in and whatever their
 * `updatedAt` says (workers stamp it before they write, so two writers' stamps can commit in the other
 * order). A job runs as a sequence of real states; the events of those states reach the watcher late,
 * twice, or out of order, before and after the subscription's first read.
 */
const principal = { accountId: 'a'.repeat(24), keyId: 'k'.repeat(24) } as Principal;
const signer = new ImageUrlSigner('s'.repeat(32), 3600);
const urls = { baseUrl: 'http://127.0.0.1' };
const viewing = signedViewing({ signer, baseUrl: urls.baseUrl, offer: BUILTIN_OFFER, retentionMs: 30 * 24 * 3600 * 1000 });
const view = (r: JobRecord): JobView => toJobView(r, viewing);

/** Every state a job of `n` images passes through, in commit order, with stamps that are not monotonic. */
function runOfJob(n: number, random: () => number): JobRecord[] {
  const t0 = Date.UTC(2026, 0, 1);
  let job: JobRecord = {
    id: '00000000-0000-4000-8000-000000000001',
    accountId: principal.accountId,
    keyId: null,
    status: 'queued',
    totalImages: n,
    succeededImages: 0,
    failedImages: 0,
    canceledImages: 0,
    creditsUsed: n,
    creditsRefunded: 0,
    cancelRequestedAt: null,
    charged: true,
    images: Array.from({ length: n }, (_, index) => ({ index, prompt: `p${index}`, status: 'queued' as const, attempt: 0, fileId: null, error: null, refund: 'none' as const, startedAt: null, heartbeatAt: null, finishedAt: null })),
    createdAt: new Date(t0),
    updatedAt: new Date(t0),
    completedAt: null,
  };
  const states = [job];
  const next = (change: (j: JobRecord) => void) => {
    job = structuredClone(job);
    change(job);
    // A stamp taken before the write: up to 50 ms off the commit order.
    job.updatedAt = new Date(t0 + states.length * 10 + Math.floor(random() * 50));
    states.push(job);
  };
  const pending = new Set(job.images.map((i) => i.index));
  while (pending.size) {
    const index = [...pending][Math.floor(random() * pending.size)]!;
    const image = () => job.images[index]!;
    next((j) => {
      j.status = 'running';
      j.images[index]!.status = 'running';
      j.images[index]!.attempt++;
    });
    // Sometimes a worker gives the attempt up, and the image is queued for a retry.
    if (random() < 0.2) {
      next((j) => void (j.images[index]!.status = 'queued'));
      next((j) => {
        j.images[index]!.status = 'running';
        j.images[index]!.attempt++;
      });
    }
    if (random() < 0.85) {
      next((j) => {
        j.images[index]!.status = 'succeeded';
        j.succeededImages++;
      });
    } else {
      next((j) => {
        j.images[index]!.status = 'failed';
        j.failedImages++;
      });
      next((j) => void j.creditsRefunded++);
    }
    expect(image().status).not.toBe('running');
    pending.delete(index);
  }
  next((j) => {
    j.status = 'completed';
    j.completedAt = j.updatedAt;
  });
  return states;
}

function seeded(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** A feed the test drives: `emit` delivers to the subscribed listener. */
function feed() {
  let listener: ((r: JobRecord) => void) | undefined;
  const changes: JobChangeFeed = {
    subscribe: (_id, l) => {
      listener = l;
      return () => void (listener = undefined);
    },
    ready: async () => undefined,
  };
  return { changes, emit: (r: JobRecord) => listener?.(r) };
}

const rank = { queued: 0, running: 1, succeeded: 2, failed: 2, canceled: 2, completed: 2 } as const;

function expectForwardOnly(pushed: JobView[]): void {
  for (let i = 1; i < pushed.length; i++) {
    const [a, b] = [pushed[i - 1]!, pushed[i]!];
    const where = `push ${i}: ${a.succeededImages}→${b.succeededImages}`;
    expect(rank[b.status], where).toBeGreaterThanOrEqual(rank[a.status]);
    expect(b.succeededImages, where).toBeGreaterThanOrEqual(a.succeededImages);
    expect(b.failedImages, where).toBeGreaterThanOrEqual(a.failedImages);
    expect(b.creditsRefunded, where).toBeGreaterThanOrEqual(a.creditsRefunded);
    for (const image of b.images) expect(rank[image.status], where).toBeGreaterThanOrEqual(rank[a.images[image.index]!.status]);
  }
}

describe('jobStatus pushes only move forward', () => {
  it('drops an older state whose updatedAt is later (the reported 7, 3, 11, 12)', () => {
    const states = runOfJob(12, seeded(7));
    const seven = states.find((s) => s.succeededImages === 7)!;
    const three = { ...structuredClone(states.find((s) => s.succeededImages === 3)!), updatedAt: new Date(seven.updatedAt.getTime() + 1) };
    expect(isNewer(view(three), view(seven))).toBe(false);
    expect(isNewer(view(seven), view(three))).toBe(true);
    expect(isNewer(view(seven), view(seven))).toBe(false);
  });

  it('shows an image released for a retry as running, never queued again', () => {
    const isReleased = (s: JobRecord) => s.images.some((i) => i.status === 'queued' && i.attempt > 0);
    let seed = 1;
    while (!runOfJob(6, seeded(seed)).some(isReleased)) seed++;
    const released = runOfJob(6, seeded(seed)).find(isReleased);
    expect(released, 'the run has a released image').toBeDefined();
    for (const image of view(released!).images) if (released!.images[image.index]!.attempt > 0) expect(image.status).not.toBe('queued');
  });

  it('over 400 runs, a subscription opened at any moment pushes only forward and ends with the final state', async () => {
    for (let run = 0; run < 400; run++) {
      const random = seeded(run + 1);
      const states = runOfJob(1 + Math.floor(random() * 12), random);
      const { changes, emit } = feed();
      // The subscription's first read sees the state at `openAt`; events of states before and after it
      // arrive shuffled: some before the read resolves, the rest after, some twice.
      const openAt = Math.floor(random() * states.length);
      let resolveRead!: (v: JobView) => void;
      const jobs = { get: () => new Promise<JobView>((r) => (resolveRead = r)), viewOf: (_p: Principal, r: JobRecord) => view(r) };
      const watcher = new JobWatcher({ jobs, changes });
      const events = states.slice(Math.max(0, openAt - 5)).flatMap((s) => (random() < 0.1 ? [s, s] : [s]));
      for (let i = events.length - 1; i > 0; i--) {
        const j = Math.max(0, i - Math.floor(random() * 4));
        [events[i], events[j]] = [events[j]!, events[i]!];
      }
      const watching = watcher.watch(principal, states[0]!.id, urls, new AbortController().signal);
      await Promise.resolve();
      const early = Math.floor(random() * events.length);
      for (const e of events.slice(0, early)) emit(e);
      resolveRead(view(states[openAt]!));
      const iterator = await watching;
      for (const e of events.slice(early)) emit(e);
      // The final state is the last commit: a real feed delivers it last or again after anything older.
      emit(states.at(-1)!);
      const pushed: JobView[] = [];
      for await (const v of iterator) pushed.push(v);
      expectForwardOnly(pushed);
      expect(pushed.at(-1)!.status, `run ${run}`).toBe('completed');
      expect(pushed[0]).toEqual(view(states[openAt]!));
    }
  });
});
