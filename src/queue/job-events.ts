import type { Db } from 'mongodb';
import { CollectionWatcher, type WatchEvent, type WatcherLogger } from '../data/collection-watcher.js';
import { toJobRecord } from '../data/jobs.js';
import type { JobDoc } from '../data/models/job.js';
import type { JobChangeFeed, JobRecord } from '../domain/jobs/records.js';

/**
 * Cross-process job events for the GraphQL `jobStatus` subscription. Workers run in other processes
 * and only write the `jobs` collection, so the gateway learns of changes from the database:
 *  - `changestream`: ONE change stream per gateway process on `jobs` (a replica set, or the embedded
 *    server), whatever the number of subscribers;
 *  - `poll`: one query per interval for the jobs changed since the last one (standalone MongoDB);
 *  - `auto`: change streams when the deployment has them, polling otherwise (and after a stream fails).
 * The source is the shared CollectionWatcher; this module adds the per-job fan-out.
 * Changes are fanned out in process to the listeners of each job id. Listeners receive the stored
 * record; turning it into a caller's view (access rule, signed URLs) is ImageJobService.viewOf.
 */

export type JobEventsMode = 'auto' | 'changestream' | 'poll';
export type JobListener = (job: JobRecord) => void;

export interface JobEvents extends JobChangeFeed {
  /** The source in use: `changestream` or `poll`; `stopped` before start and after close. */
  readonly activeMode: 'changestream' | 'poll' | 'stopped';
  subscribe(jobId: string, listener: JobListener): () => void;
  /**
   * Resolves once changes are being watched (starting the watcher on first use, so a gateway no one
   * subscribes to opens no stream); every change committed after that is delivered.
   */
  ready(): Promise<void>;
  /** Number of live listeners (all jobs), for tests and metrics. */
  listenerCount(): number;
}

const JOBS_COLLECTION = 'jobs';

export interface MongoJobEventsOptions {
  db: Db;
  mode: JobEventsMode;
  pollMs: number;
  log?: WatcherLogger;
}

export class MongoJobEvents implements JobEvents {
  private readonly listeners = new Map<string, Set<JobListener>>();
  /** Last state delivered per watched job: stream events for invisible writes (heartbeats) are dropped. */
  private readonly lastSeen = new Map<string, string>();
  private readonly watcher: CollectionWatcher<JobDoc>;
  private starting?: Promise<void>;
  private closed = false;

  constructor(private readonly opts: MongoJobEventsOptions) {
    this.watcher = new CollectionWatcher<JobDoc>({
      db: opts.db,
      collection: JOBS_COLLECTION,
      operationTypes: ['insert', 'update', 'replace'],
      fullDocument: true,
      mode: opts.mode,
      pollMs: opts.pollMs,
      log: opts.log,
      onEvent: (event) => void this.onEvent(event),
    });
  }

  get activeMode(): 'changestream' | 'poll' | 'stopped' {
    return this.watcher.state;
  }

  ready(): Promise<void> {
    if (this.closed) return Promise.reject(new Error('job events are closed'));
    // Memoized; a failed start (JOB_EVENTS=changestream on a deployment without streams) is retried
    // by the next subscriber rather than cached.
    this.starting ??= this.watcher.start().catch((err: unknown) => {
      this.starting = undefined;
      throw err;
    });
    return this.starting;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.starting?.catch(() => undefined);
    await this.watcher.close();
    this.listeners.clear();
    this.lastSeen.clear();
  }

  subscribe(jobId: string, listener: JobListener): () => void {
    const id = normalizeId(jobId);
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      const current = this.listeners.get(id);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) {
        this.listeners.delete(id);
        this.lastSeen.delete(id);
      }
    };
  }

  listenerCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  private async onEvent(event: WatchEvent<JobDoc>): Promise<void> {
    const id = String(event.documentKey._id);
    // Unwatched jobs (most of them) cost nothing beyond the event itself.
    if (!this.listeners.has(id)) return;
    let doc = event.fullDocument;
    if (!doc) {
      // A deployment that did not look the document up: one read per change, shared by every listener.
      doc = (await this.opts.db.collection<JobDoc>(JOBS_COLLECTION).findOne({ _id: id }).catch(() => null)) ?? undefined;
      if (!doc) return;
    }
    this.deliver(doc);
  }

  private deliver(doc: JobDoc): void {
    const id = String(doc._id);
    const set = this.listeners.get(id);
    if (!set) return;
    const signature = stateSignature(doc);
    if (this.lastSeen.get(id) === signature) return;
    this.lastSeen.set(id, signature);
    const record = toJobRecord(doc);
    for (const listener of [...set]) {
      try {
        listener(record);
      } catch (err) {
        this.opts.log?.warn({ err, jobId: id }, 'job events: a listener threw');
      }
    }
  }
}

function normalizeId(jobId: string): string {
  return jobId.trim().toLowerCase();
}

/** What clients can see change; heartbeats and lock bookkeeping do not count. */
function stateSignature(doc: JobDoc): string {
  const images = (doc.images ?? []).map((i) => `${i.index}:${i.status}`).join(',');
  const updated = doc.updatedAt instanceof Date ? doc.updatedAt.getTime() : String(doc.updatedAt);
  return `${doc.status}|${doc.charged}|${doc.succeededImages}|${doc.failedImages}|${doc.creditsRefunded}|${updated}|${images}`;
}
