import { FINAL_JOB_STATUSES, type JobView } from '../domain/jobs/types.js';
import type { JobRecord } from '../domain/jobs/records.js';
import type { ImageJobService, JobUrlContext } from '../domain/ports.js';
import type { Principal } from '../domain/principal.js';
import type { JobEvents } from './job-events.js';

export interface JobWatch {
  services: { jobs: ImageJobService; jobEvents: JobEvents };
  principal: Principal;
  urls: JobUrlContext;
  /** Aborting ends the stream with the signal's reason (GraphQL: the key was deleted). */
  signal: AbortSignal;
}

/**
 * A job as it changes, for any door that pushes (GraphQL `jobStatus`, the console's playground): the job's current state first, then every visible change, ending after
 * `completed` or `failed`. Listening starts BEFORE the current state is read, so a change landing in
 * between is not lost; events older than (or equal to) what was already sent are dropped.
 *
 * Built as a hand-written iterator rather than an async generator: a generator suspended in an await
 * cannot be returned early, and a client that unsubscribes must release its listener at once.
 */
export async function watchJob(ctx: JobWatch, jobId: string): Promise<AsyncIterableIterator<JobView>> {
  const { services, principal, urls, signal } = ctx;
  const out = new PushIterator<JobView>();
  let current: JobView | null = null;
  const early: JobRecord[] = [];

  const consider = (record: JobRecord) => {
    if (!current) return void early.push(record);
    const view = services.jobs.viewOf(principal, record, urls);
    if (!view || !isNewer(view, current)) return;
    current = view;
    out.push(view);
    if (FINAL_JOB_STATUSES.has(view.status)) out.end();
  };

  const unsubscribe = services.jobEvents.subscribe(jobId, consider);
  const onAbort = () => out.fail(signal.reason);
  out.onClose(() => {
    unsubscribe();
    signal.removeEventListener('abort', onAbort);
  });
  try {
    signal.throwIfAborted();
    // Watching must be live before the current state is read, or a change in between could be lost.
    await services.jobEvents.ready();
    // Unknown, malformed or another account's id: the same 404 as `job(id)` and REST.
    current = await services.jobs.get(principal, jobId, urls);
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

/** Later state than `prev`: a newer updatedAt, or the same instant with different visible content. */
function isNewer(next: JobView, prev: JobView): boolean {
  const dt = next.updatedAt.getTime() - prev.updatedAt.getTime();
  if (dt !== 0) return dt > 0;
  return visibleState(next) !== visibleState(prev);
}

function visibleState(v: JobView): string {
  return `${v.status}|${v.succeededImages}|${v.failedImages}|${v.creditsRefunded}|${v.images.map((i) => i.status).join(',')}`;
}

/** A queue-backed async iterator that producers push into; return() releases it immediately. */
export class PushIterator<T> implements AsyncIterableIterator<T> {
  private readonly values: T[] = [];
  private readonly waiters: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }[] = [];
  private done = false;
  private error: { reason: unknown } | null = null;
  private closers: (() => void)[] = [];

  onClose(fn: () => void): void {
    this.closers.push(fn);
  }

  push(value: T): void {
    if (this.done || this.error) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ value, done: false });
    else this.values.push(value);
  }

  /** Ends after the values already pushed have been read. */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.release();
    this.flush();
  }

  /** Fails after the values already pushed have been read. */
  fail(reason: unknown): void {
    if (this.done || this.error) return;
    this.error = { reason };
    this.release();
    this.flush();
  }

  /** Ends now, dropping unread values. */
  close(): void {
    this.values.length = 0;
    this.end();
  }

  next(): Promise<IteratorResult<T>> {
    const value = this.values.shift();
    if (value !== undefined) return Promise.resolve({ value, done: false });
    if (this.error) {
      const { reason } = this.error;
      this.error = null;
      this.done = true;
      return Promise.reject(reason);
    }
    if (this.done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(err?: unknown): Promise<IteratorResult<T>> {
    this.close();
    return Promise.reject(err);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  private flush(): void {
    // Only reached with no buffered values (a waiter exists only when the buffer is empty).
    while (this.waiters.length) {
      const waiter = this.waiters.shift()!;
      if (this.error) {
        const { reason } = this.error;
        this.error = null;
        this.done = true;
        waiter.reject(reason);
      } else {
        waiter.resolve({ value: undefined, done: true });
      }
    }
  }

  private release(): void {
    const closers = this.closers;
    this.closers = [];
    for (const fn of closers) fn();
  }
}
