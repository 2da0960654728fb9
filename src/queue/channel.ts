import { BaseNotificationChannel, toJobId, type JobNotification } from 'agenda';
import type { ChangeStream, Db, Document } from 'mongodb';

/**
 * How Agenda learns that work is waiting, without waiting for its poll:
 *  - across processes: a change stream on the queue collection reports inserts (where the deployment
 *    has change streams; probed at connect, polling remains the backstop otherwise);
 *  - in this process: `publish` (Agenda calls it when this process enqueues) and `kick` (after a run
 *    finishes, so a worker that held back because of its lock limit takes the next entry at once).
 * Only inserts are watched: lock and state updates would wake every worker for nothing.
 */
/** Reopening a failed stream: first after this long, doubling up to the maximum while it keeps failing. */
const REOPEN_FIRST_MS = 500;
const REOPEN_MAX_MS = 10_000;

export class QueueNotificationChannel extends BaseNotificationChannel {
  private stream?: ChangeStream;
  private watching = false;
  private reopenTimer?: NodeJS.Timeout;
  private reopenDelayMs = REOPEN_FIRST_MS;
  private readonly kicked = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly collection: string,
    private readonly mode: 'auto' | 'changestream' | 'poll',
  ) {
    super({ channelName: `queue:${collection}`, reconnect: { enabled: false } });
  }

  /** True when other processes' enqueues reach this one immediately. */
  get crossProcess(): boolean {
    return this.watching;
  }

  async connect(): Promise<void> {
    this.setState('connecting');
    if (this.mode !== 'poll') {
      try {
        await this.openStream();
      } catch (err) {
        if (this.mode === 'changestream') {
          this.setState('error');
          throw err;
        }
        // auto: this deployment has no change streams (standalone server); the short poll covers it.
      }
    }
    this.setState('connected');
  }

  async disconnect(): Promise<void> {
    this.watching = false;
    this.setState('disconnected');
    clearTimeout(this.reopenTimer);
    this.reopenTimer = undefined;
    const stream = this.stream;
    this.stream = undefined;
    await stream?.close().catch(() => undefined);
  }

  async publish(notification: JobNotification): Promise<void> {
    // The change stream will report this insert to every process, this one included.
    if (this.watching) return;
    await this.notifyHandlers(notification);
  }

  /**
   * Wakes this process's job processor for `jobName`. Kicks of one tick are coalesced: one queue fill
   * locks up to the lock limit anyway, and concurrent fills overshoot it (lock, then unlock again).
   */
  kick(jobName: string): void {
    if (this.kicked.has(jobName)) return;
    this.kicked.add(jobName);
    setImmediate(() => {
      this.kicked.delete(jobName);
      void this.notifyHandlers({ jobId: toJobId('local'), jobName, nextRunAt: new Date(), priority: 0, timestamp: new Date(), source: 'local' });
    });
  }

  private async openStream(): Promise<void> {
    // watch() is lazy; a probe's first round trip tells whether the deployment supports change streams
    // (a stream used as an iterator cannot become an event emitter, hence two streams). The emitter
    // stream opens its cursor only after connect() has returned, so it resumes from the probe's position:
    // an insert made as soon as connect() returns is reported, not left to the backstop poll.
    const probe = this.db.collection(this.collection).watch([], { maxAwaitTimeMS: 1 });
    let from: unknown;
    try {
      await probe.tryNext();
      from = probe.resumeToken;
    } finally {
      await probe.close().catch(() => undefined);
    }
    const stream = this.db.collection(this.collection).watch<Document>([{ $match: { operationType: 'insert' } }], {
      maxAwaitTimeMS: 1000,
      // Absent only where the server sends no postBatchResumeToken (MongoDB before 4.0.7).
      ...(from ? { resumeAfter: from } : {}),
    });
    stream.on('change', (change: Document) => {
      const doc = change.fullDocument as { _id: unknown; name: string; nextRunAt?: Date | null; priority?: number; disabled?: boolean } | undefined;
      if (!doc?.nextRunAt || doc.disabled) return;
      void this.notifyHandlers({
        jobId: toJobId(String(doc._id)),
        jobName: doc.name,
        nextRunAt: new Date(doc.nextRunAt),
        priority: doc.priority ?? 0,
        timestamp: new Date(),
        source: 'changestream',
      });
    });
    // The driver resumes a stream across brief network errors by itself. When it gives up, it emits
    // 'error' (not always: a failed resume may only close it) and closes: either way, poll until a new
    // stream is open. An 'error' event without a listener would throw and end the process.
    stream.on('error', (err: unknown) => {
      if (this.listenerCount('error') > 0) this.emit('error', err instanceof Error ? err : new Error(String(err)));
      this.streamLost(stream);
    });
    stream.on('close', () => this.streamLost(stream));
    this.stream = stream;
    this.watching = true;
    this.reopenDelayMs = REOPEN_FIRST_MS;
  }

  private streamLost(stream: ChangeStream): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    this.watching = false;
    void stream.close().catch(() => undefined);
    this.scheduleReopen();
  }

  /** Tries to watch again, with backoff, for as long as the channel is connected (through an outage too). */
  private scheduleReopen(): void {
    if (this.state !== 'connected' || this.reopenTimer) return;
    const delay = this.reopenDelayMs;
    this.reopenDelayMs = Math.min(delay * 2, REOPEN_MAX_MS);
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined;
      if (this.state !== 'connected' || this.watching) return;
      this.openStream().then(
        () => {
          // Disconnected while opening: this stream is nobody's.
          if (this.state !== 'connected') void this.disconnect();
        },
        () => this.scheduleReopen(),
      );
    }, delay);
    this.reopenTimer.unref();
  }
}
