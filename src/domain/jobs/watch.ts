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
 * not lost; events older than (or equal to) what was already sent are dropped.
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

/** Later state than `prev`: a newer updatedAt, or the same instant with different visible content. */
function isNewer(next: JobView, prev: JobView): boolean {
  const dt = next.updatedAt.getTime() - prev.updatedAt.getTime();
  if (dt !== 0) return dt > 0;
  return visibleState(next) !== visibleState(prev);
}

function visibleState(v: JobView): string {
  return `${v.status}|${v.succeededImages}|${v.failedImages}|${v.creditsRefunded}|${v.images.map((i) => i.status).join(',')}`;
}
