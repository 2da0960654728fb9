import type { ChangeStream, ChangeStreamDocument, Collection, Document } from 'mongodb';
import type { JobDoc } from '../data/models/job.js';
import type { JobRecord } from '../domain/jobs/records.js';

/**
 * Cross-process job events for the GraphQL `jobStatus` subscription. Workers run in other processes
 * and only write the `jobs` collection, so the gateway learns of changes from the database:
 *  - `changestream`: ONE change stream per gateway process on `jobs` (a replica set, or the embedded
 *    server), whatever the number of subscribers;
 *  - `poll`: one query per interval for all watched jobs together (standalone MongoDB);
 *  - `auto`: change streams when the deployment has them, polling otherwise (and after a stream fails).
 * Changes are fanned out in process to the listeners of each job id. Listeners receive the stored
 * record; turning it into a caller's view (access rule, signed URLs) is ImageJobService.viewOf.
 */

export type JobEventsMode = 'auto' | 'changestream' | 'poll';
export type JobListener = (job: JobRecord) => void;

export interface JobEvents {
  /** The source in use: `changestream` or `poll`; `stopped` before start and after close. */
  readonly activeMode: 'changestream' | 'poll' | 'stopped';
  /** Calls `listener` with the job after each of its changes, until the returned function is called. */
  subscribe(jobId: string, listener: JobListener): () => void;
  /** Number of live listeners (all jobs), for tests and metrics. */
  listenerCount(): number;
}

export interface JobEventSourceLogger {
  warn(obj: object, msg: string): void;
}

export interface MongoJobEventsOptions {
  collection: Collection<Document>;
  mode: JobEventsMode;
  pollMs: number;
  log?: JobEventSourceLogger;
}

export class MongoJobEvents implements JobEvents {
  private readonly listeners = new Map<string, Set<JobListener>>();
  /** Last state delivered per watched job, so polling only reports real changes. */
  private readonly lastSeen = new Map<string, string>();
  private stream?: ChangeStream<Document>;
  private pollTimer?: NodeJS.Timeout;
  private polling = false;
  private mode: 'changestream' | 'poll' | 'stopped' = 'stopped';
  private closed = false;

  constructor(private readonly opts: MongoJobEventsOptions) {}

  get activeMode(): 'changestream' | 'poll' | 'stopped' {
    return this.mode;
  }

  async start(): Promise<void> {
    if (this.opts.mode !== 'poll') {
      try {
        await this.openStream();
        return;
      } catch (err) {
        if (this.opts.mode === 'changestream') throw err;
        this.opts.log?.warn({ err }, 'job events: no change streams on this deployment, polling instead');
      }
    }
    this.startPolling();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.mode = 'stopped';
    clearInterval(this.pollTimer);
    const stream = this.stream;
    this.stream = undefined;
    await stream?.close().catch(() => undefined);
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

  private async openStream(): Promise<void> {
    // watch() is lazy: the probe's first round trip is what tells whether the deployment has change
    // streams (a stream read as an iterator cannot become an event emitter, hence a separate probe).
    const probe = this.opts.collection.watch([], { maxAwaitTimeMS: 1 });
    try {
      await probe.tryNext();
    } finally {
      await probe.close().catch(() => undefined);
    }
    const stream = this.opts.collection.watch<Document>(
      [{ $match: { operationType: { $in: ['insert', 'update', 'replace'] } } }],
      { fullDocument: 'updateLookup', maxAwaitTimeMS: 1000 },
    );
    stream.on('change', (change: ChangeStreamDocument<Document>) => void this.onChange(change));
    stream.on('error', (err: unknown) => this.onStreamError(err));
    this.stream = stream;
    this.mode = 'changestream';
  }

  private async onChange(change: ChangeStreamDocument<Document>): Promise<void> {
    if (!('documentKey' in change)) return;
    const id = String((change.documentKey as { _id: unknown })._id);
    // Unwatched jobs (most of them) cost nothing beyond the event itself.
    if (!this.listeners.has(id)) return;
    let doc = 'fullDocument' in change ? (change.fullDocument as JobDoc | undefined) : undefined;
    if (!doc) {
      // A deployment that does not look the document up: one read per change, shared by every listener.
      doc = (await this.opts.collection.findOne({ _id: id as never }).catch(() => null)) as JobDoc | null ?? undefined;
      if (!doc) return;
    }
    this.deliver(doc);
  }

  private onStreamError(err: unknown): void {
    if (this.closed) return;
    this.opts.log?.warn({ err }, 'job events: change stream failed, polling instead');
    const stream = this.stream;
    this.stream = undefined;
    void stream?.close().catch(() => undefined);
    // Polling compares against the last delivered state, so whatever the stream missed is caught up.
    this.startPolling();
  }

  private startPolling(): void {
    if (this.closed) return;
    this.mode = 'poll';
    clearInterval(this.pollTimer);
    this.pollTimer = setInterval(() => void this.pollOnce(), this.opts.pollMs);
    this.pollTimer.unref();
  }

  private async pollOnce(): Promise<void> {
    if (this.polling || this.listeners.size === 0) return;
    this.polling = true;
    try {
      const ids = [...this.listeners.keys()];
      const docs = (await this.opts.collection.find({ _id: { $in: ids as never[] } }).toArray()) as unknown as JobDoc[];
      for (const doc of docs) this.deliver(doc);
    } catch (err) {
      this.opts.log?.warn({ err }, 'job events: poll failed, retrying at the next interval');
    } finally {
      this.polling = false;
    }
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

/** The stored document as the domain's JobRecord (`_id` → `id`; absent optional fields → null). */
export function toJobRecord(doc: JobDoc): JobRecord {
  const { _id, ...rest } = doc;
  return {
    ...rest,
    id: String(_id),
    completedAt: rest.completedAt ?? null,
    images: (rest.images ?? []).map((i) => ({
      ...i,
      fileId: i.fileId ?? null,
      error: i.error ?? null,
      startedAt: i.startedAt ?? null,
      heartbeatAt: i.heartbeatAt ?? null,
      finishedAt: i.finishedAt ?? null,
    })),
  };
}
