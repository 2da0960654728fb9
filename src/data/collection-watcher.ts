import type { ChangeStream, ChangeStreamDocument, Db, Document, Filter } from 'mongodb';

/**
 * Watches one collection for changes made by any process: a change stream where the deployment has
 * them (replica sets, sharded clusters, the embedded server), else polling by an `updatedAt` field.
 *
 * Usage:
 *   const watcher = new CollectionWatcher({ db, collection: 'api_keys', onEvent: (e) => ..., onStateChange: (s) => ... });
 *   await watcher.start();          // resolves once the stream is established (or polling started)
 *   watcher.state                   // 'changestream' | 'poll' | 'stopped'
 *   watcher.live                    // true only while a change stream is open: no change can be missed
 *   await watcher.close();
 *
 * Guarantees and limits:
 *  - `live` becomes true only after the stream's cursor is established on the server, so every change
 *    committed after that moment is reported. While polling, `live` is false: changes arrive late
 *    (up to pollMs), only if the writer moved `updatedAt`, and hard deletes are never seen.
 *  - Polling reports every changed document as operationType 'update' with its fullDocument.
 *  - `match` filters on document fields (e.g. `{ accountId: 'x' }`); in the stream it applies to
 *    `fullDocument`, so with match set, deletes (which have none) are always reported.
 *  - mode 'auto' falls back to polling when the stream fails or is refused, and tries to reopen a
 *    stream every `retryStreamMs`; every switch is announced through onStateChange.
 */

export type WatchMode = 'auto' | 'changestream' | 'poll';
export type WatcherState = 'changestream' | 'poll' | 'stopped';

export interface WatchEvent<T extends Document = Document> {
  operationType: 'insert' | 'update' | 'replace' | 'delete';
  documentKey: { _id: unknown };
  /** The document after the change (stream: when `fullDocument` was asked for and it still exists; polling: always). */
  fullDocument?: T;
}

export interface WatcherLogger {
  warn(obj: object, msg: string): void;
}

export interface CollectionWatcherOptions<T extends Document = Document> {
  db: Db;
  collection: string;
  onEvent: (event: WatchEvent<T>) => void;
  /** Called on every switch between streaming, polling and stopped. */
  onStateChange?: (state: WatcherState) => void;
  match?: Filter<T>;
  /** Which changes to report; default all four. */
  operationTypes?: readonly WatchEvent['operationType'][];
  /** Look up the full document for updates in the stream (one more read per change on the server). */
  fullDocument?: boolean;
  /**
   * Report an update only when it sets one of these fields (the stream filters on the server, so other
   * updates cost this process nothing); inserts, replaces and deletes are reported as before. Polling
   * sees only writes that move `updatedAtField` anyway: name that field here too.
   */
  updatesSetting?: readonly string[];
  mode?: WatchMode;
  pollMs?: number;
  /** Field moved by every write, for polling. */
  updatedAtField?: string;
  /** Polling re-reads this far back, so writers whose clocks lag a little are not missed. */
  pollOverlapMs?: number;
  retryStreamMs?: number;
  log?: WatcherLogger;
}

const ALL_OPS: readonly WatchEvent['operationType'][] = ['insert', 'update', 'replace', 'delete'];

export class CollectionWatcher<T extends Document = Document> {
  private current: WatcherState = 'stopped';
  private stream?: ChangeStream<T>;
  private pollTimer?: NodeJS.Timeout;
  private retryTimer?: NodeJS.Timeout;
  private polling = false;
  private closed = false;
  /** Polling position: documents with updatedAt >= since - overlap are read again; `delivered` dedupes. */
  private since = new Date();
  private readonly delivered = new Map<string, number>();
  private readonly opts: Required<Omit<CollectionWatcherOptions<T>, 'match' | 'onStateChange' | 'log' | 'updatesSetting'>> &
    Pick<CollectionWatcherOptions<T>, 'match' | 'onStateChange' | 'log' | 'updatesSetting'>;

  constructor(options: CollectionWatcherOptions<T>) {
    this.opts = {
      operationTypes: ALL_OPS,
      fullDocument: false,
      mode: 'auto',
      pollMs: 1000,
      updatedAtField: 'updatedAt',
      pollOverlapMs: 2000,
      retryStreamMs: 30_000,
      ...options,
    };
  }

  get state(): WatcherState {
    return this.current;
  }

  /** True while a change stream is open: every change committed from now on will be reported. */
  get live(): boolean {
    return this.current === 'changestream';
  }

  async start(): Promise<void> {
    if (this.opts.mode !== 'poll') {
      try {
        await this.openStream();
        return;
      } catch (err) {
        if (this.opts.mode === 'changestream') throw err;
        this.opts.log?.warn({ err, collection: this.opts.collection }, 'no change streams here: polling instead');
      }
    }
    this.startPolling();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.retryTimer);
    const stream = this.stream;
    this.stream = undefined;
    await stream?.close().catch(() => undefined);
    this.setState('stopped');
  }

  private async openStream(): Promise<void> {
    const collection = this.opts.db.collection<T>(this.opts.collection);
    const $match: Document = { operationType: { $in: [...this.opts.operationTypes] } };
    const and: Document[] = [];
    if (this.opts.match) {
      and.push({ $or: [{ operationType: 'delete' }, prefixFields(this.opts.match as Document, 'fullDocument.')] });
    }
    if (this.opts.updatesSetting) {
      const sets = this.opts.updatesSetting.map((field) => ({ [`updateDescription.updatedFields.${field}`]: { $exists: true } }));
      and.push({ $or: [{ operationType: { $ne: 'update' } }, ...sets] });
    }
    if (and.length === 1) Object.assign($match, and[0]);
    else if (and.length > 1) $match.$and = and;
    const stream = collection.watch<T>([{ $match }], {
      fullDocument: this.opts.fullDocument ? 'updateLookup' : undefined,
      maxAwaitTimeMS: 1000,
    });
    try {
      // The first round trip establishes the cursor on the server (or fails where streams are not
      // supported); from its return on, no change can be missed.
      const first = await stream.tryNext();
      if (this.closed) {
        await stream.close();
        return;
      }
      this.stream = stream;
      this.setState('changestream');
      if (first) this.emitChange(first as ChangeStreamDocument<T>);
    } catch (err) {
      await stream.close().catch(() => undefined);
      throw err;
    }
    void this.pump(stream);
  }

  private async pump(stream: ChangeStream<T>): Promise<void> {
    try {
      while (!this.closed && this.stream === stream) {
        const change = await stream.tryNext();
        if (change) this.emitChange(change as ChangeStreamDocument<T>);
      }
    } catch (err) {
      if (this.closed || this.stream !== stream) return;
      this.onStreamLost(err);
    }
  }

  private onStreamLost(err: unknown): void {
    this.opts.log?.warn({ err, collection: this.opts.collection }, 'change stream lost: polling instead');
    const stream = this.stream;
    this.stream = undefined;
    void stream?.close().catch(() => undefined);
    if (this.opts.mode === 'changestream') {
      this.setState('stopped');
      return;
    }
    // Polling picks up from a little before now: whatever the stream missed meanwhile is read again.
    this.since = new Date(Date.now() - this.opts.pollOverlapMs);
    this.startPolling();
    this.scheduleStreamRetry();
  }

  private scheduleStreamRetry(): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      if (this.closed) return;
      this.openStream().then(
        () => clearInterval(this.pollTimer),
        () => this.scheduleStreamRetry(),
      );
    }, this.opts.retryStreamMs);
    this.retryTimer.unref();
  }

  private emitChange(change: ChangeStreamDocument<T>): void {
    const op = change.operationType;
    if (op !== 'insert' && op !== 'update' && op !== 'replace' && op !== 'delete') {
      // drop / rename / invalidate: the stream is over; treat it as lost so consumers stop trusting it.
      if (op === 'invalidate' || op === 'drop' || op === 'rename' || op === 'dropDatabase') this.onStreamLost(new Error(`change stream ended by ${op}`));
      return;
    }
    const event: WatchEvent<T> = { operationType: op, documentKey: change.documentKey as { _id: unknown } };
    if ('fullDocument' in change && change.fullDocument) event.fullDocument = change.fullDocument as T;
    this.deliver(event);
  }

  private deliver(event: WatchEvent<T>): void {
    try {
      this.opts.onEvent(event);
    } catch (err) {
      this.opts.log?.warn({ err, collection: this.opts.collection }, 'watch listener failed');
    }
  }

  private startPolling(): void {
    if (this.closed) return;
    this.setState('poll');
    clearInterval(this.pollTimer);
    this.pollTimer = setInterval(() => void this.pollOnce(), this.opts.pollMs);
    this.pollTimer.unref();
  }

  private async pollOnce(): Promise<void> {
    if (this.polling || this.closed) return;
    this.polling = true;
    try {
      const field = this.opts.updatedAtField;
      const from = new Date(this.since.getTime() - this.opts.pollOverlapMs);
      const filter: Document = { [field]: { $gte: from } };
      const query = this.opts.match ? { $and: [this.opts.match as Document, filter] } : filter;
      const docs = await this.opts.db
        .collection<T>(this.opts.collection)
        .find(query as Filter<T>)
        .sort({ [field]: 1 })
        .limit(5000)
        .toArray();
      for (const doc of docs) {
        const at = doc[field] instanceof Date ? (doc[field] as Date).getTime() : Number.NaN;
        const id = String(doc._id);
        if (this.delivered.get(id) === at) continue;
        this.delivered.set(id, at);
        if (at > this.since.getTime()) this.since = new Date(at);
        if (this.current === 'poll') this.deliver({ operationType: 'update', documentKey: { _id: doc._id }, fullDocument: doc as T });
      }
      const horizon = this.since.getTime() - this.opts.pollOverlapMs;
      for (const [id, at] of this.delivered) if (!(at >= horizon)) this.delivered.delete(id);
    } catch (err) {
      this.opts.log?.warn({ err, collection: this.opts.collection }, 'polling for changes failed');
    } finally {
      this.polling = false;
    }
  }

  private setState(state: WatcherState): void {
    if (this.current === state) return;
    this.current = state;
    this.opts.onStateChange?.(state);
  }
}

/** `{a: 1, $or: [{b: 2}]}` → `{'fullDocument.a': 1, $or: [{'fullDocument.b': 2}]}`. */
function prefixFields(filter: Document, prefix: string): Document {
  const out: Document = {};
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') out[key] = (value as Document[]).map((f) => prefixFields(f, prefix));
    else if (key.startsWith('$')) out[key] = value;
    else out[prefix + key] = value;
  }
  return out;
}
