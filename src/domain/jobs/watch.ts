import type { ImageJobService, JobUrlContext, JobWatch } from '../ports.js';
import type { Principal } from '../principal.js';
import { PushIterator } from './push-iterator.js';
import type { JobChangeFeed, JobRecord } from './records.js';
import { FINAL_JOB_STATUSES, type JobView } from './types.js';

export interface JobWatcherDeps {
  jobs: Pick<ImageJobService, 'get' | 'viewOf'>;
  changes: JobChangeFeed;
}

/**
 * A job as it changes, for any door that pushes (GraphQL `jobStatus`, the console's playground): the
 * job's current state first, then every change the caller may see, ending after `completed`, `failed`
 * or `canceled`. Listening starts BEFORE the current state is read, so a change landing in between is
 * not lost. A push never goes back in time: every field a client sees of a job only moves forward (the
 * job's status, each image's status, the counters, `completedAt`), so a change is pushed only when it
 * is ahead of the last one pushed in at least one of them and behind in none. An event that arrives late
 * (read before the current state, or delivered out of order by another writer's commit) is dropped,
 * whatever its `updatedAt` says: workers stamp `updatedAt` before they write, so two writers' stamps can
 * commit in the other order.
 */
export class JobWatcher implements JobWatch {
  constructor(private readonly deps: JobWatcherDeps) {}

  async watch(principal: Principal, jobId: string, urls: JobUrlContext, signal: AbortSignal): Promise<AsyncIterableIterator<JobView>> {
    const { jobs, changes } = this.deps;
    const out = new PushIterator<JobView>();
    let current: JobView | null = null;
    const early: JobRecord[] = [];

    const consider = (record: JobRecord) => {
      if (!current) return void early.push(record);
      const view = jobs.viewOf(principal, record, urls);
      if (!view || !isNewer(view, current)) return;
      current = view;
      out.push(view);
      if (FINAL_JOB_STATUSES.has(view.status)) out.end();
    };

    const unsubscribe = changes.subscribe(jobId, consider);
    const onAbort = () => out.fail(signal.reason);
    out.onClose(() => {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
    });
    try {
      signal.throwIfAborted();
      // Watching must be live before the current state is read, or a change in between could be lost.
      await changes.ready();
      // Unknown, malformed or another account's id: the same 404 as `job(id)` and REST.
      current = await jobs.get(principal, jobId, urls);
    } catch (err) {
      out.close();
      throw err;
    }
    signal.addEventListener('abort', onAbort, { once: true });
    out.push(current);
    if (FINAL_JOB_STATUSES.has(current.status)) out.end();
    else for (const record of early.splice(0)) consider(record);
    return out;
  }
}

const JOB_RANK: Record<JobView['status'], number> = { queued: 0, running: 1, completed: 2, failed: 2, canceled: 2 };
const IMAGE_RANK: Record<JobView['images'][number]['status'], number> = { queued: 0, running: 1, succeeded: 2, failed: 2, canceled: 2 };

/** `next` is ahead of `prev` in some field a client sees and behind in none. */
export function isNewer(next: JobView, prev: JobView): boolean {
  let ahead = false;
  const step = (n: number, p: number): boolean => {
    if (n < p) return false;
    if (n > p) ahead = true;
    return true;
  };
  if (!step(JOB_RANK[next.status], JOB_RANK[prev.status])) return false;
  if (!step(next.succeededImages, prev.succeededImages)) return false;
  if (!step(next.failedImages, prev.failedImages)) return false;
  if (!step(next.creditsRefunded, prev.creditsRefunded)) return false;
  if (!step(next.completedAt ? 1 : 0, prev.completedAt ? 1 : 0)) return false;
  const before = new Map(prev.images.map((i) => [i.index, IMAGE_RANK[i.status]]));
  for (const image of next.images) {
    if (!step(IMAGE_RANK[image.status], before.get(image.index) ?? 0)) return false;
  }
  return ahead;
}
