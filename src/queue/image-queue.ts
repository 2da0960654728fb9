import { Agenda } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import type { Db } from 'mongodb';
import { z } from 'zod';
import type { ImageWorkQueue } from '../domain/jobs/records.js';
import { QueueNotificationChannel } from './channel.js';

/** Queue collection shared by every gateway and worker process. */
export const QUEUE_COLLECTION = 'agendaJobs';
/** One queue entry per image. */
export const GENERATE_IMAGE = 'image.generate';
/** Periodic repair of crashed creates, pending refunds and vanished entries. */
export const SWEEP_JOBS = 'image-jobs.sweep';

export const generateImagePayload = z.object({
  jobId: z.uuid(),
  index: z.number().int().min(0),
});
export type GenerateImagePayload = z.infer<typeof generateImagePayload>;

export interface ImageQueueOptions {
  /** Identifies this process in the queue's lastModifiedBy (debugging). */
  name: string;
  /** Backstop poll; notifications normally start work sooner. */
  pollIntervalMs: number;
  lockLifetimeMs: number;
  concurrency: number;
  notifications: 'auto' | 'changestream' | 'poll';
}

/**
 * The Agenda-backed work queue. A gateway uses it to enqueue; a worker (in-process or standalone) also
 * starts it to process. One Agenda instance per process, so in-process enqueues wake the local worker.
 */
export class ImageQueue implements ImageWorkQueue {
  readonly agenda: Agenda;
  readonly channel: QueueNotificationChannel;

  private constructor(
    private readonly db: Db,
    readonly options: ImageQueueOptions,
  ) {
    this.channel = new QueueNotificationChannel(db, QUEUE_COLLECTION, options.notifications);
    this.agenda = new Agenda({
      backend: new MongoBackend({ mongo: db, collection: QUEUE_COLLECTION }),
      notificationChannel: this.channel,
      name: options.name,
      processEvery: options.pollIntervalMs,
      defaultLockLifetime: options.lockLifetimeMs,
      maxConcurrency: options.concurrency,
      defaultConcurrency: options.concurrency,
      // Finished entries are deleted: an image without an entry and not final is what the sweep requeues.
      removeOnComplete: true,
    });
  }

  static async open(db: Db, options: ImageQueueOptions): Promise<ImageQueue> {
    const queue = new ImageQueue(db, options);
    await queue.agenda.ready;
    // The sweep looks up an image's entries by job id.
    await db.collection(QUEUE_COLLECTION).createIndex({ 'data.jobId': 1 }, { name: 'imageJobId', sparse: true });
    return queue;
  }

  async enqueue(jobId: string, indexes: readonly number[]): Promise<void> {
    await Promise.all(indexes.map((index) => this.agenda.now<GenerateImagePayload>(GENERATE_IMAGE, { jobId, index })));
  }

  /** A later run of one image (another attempt looks alive until `at`). */
  async enqueueAt(jobId: string, index: number, at: Date): Promise<void> {
    await this.agenda.schedule<GenerateImagePayload>(at, GENERATE_IMAGE, { jobId, index });
  }

  async queuedIndexes(jobId: string): Promise<Set<number>> {
    // Live entries: scheduled (nextRunAt set) or running (locked). An entry that failed without a
    // retry has neither and counts as vanished.
    const docs = await this.db
      .collection(QUEUE_COLLECTION)
      .find(
        { name: GENERATE_IMAGE, 'data.jobId': jobId, $or: [{ nextRunAt: { $ne: null } }, { lockedAt: { $ne: null } }] },
        { projection: { 'data.index': 1 } },
      )
      .toArray();
    return new Set(docs.map((d) => (d.data as { index: number }).index));
  }

  /**
   * Stops processing (if started) after running work finished; leaves the database connection open.
   * Agenda's own drain() stops taking work but, with removeOnComplete, can miss the last completion
   * (the entry is still being removed when it looks) and wait for its whole timeout; so we let it stop
   * intake, watch the running and locked counts ourselves, and end the drain when both reach zero.
   */
  async close(drainTimeoutMs = 30_000): Promise<void> {
    if (this.agenda.isActiveJobProcessor()) {
      const stop = new AbortController();
      const drained = this.agenda.drain({ signal: stop.signal, closeConnection: false });
      const deadline = Date.now() + drainTimeoutMs;
      while (Date.now() < deadline) {
        const stats = await this.agenda.getRunningStats();
        if (stats.runningJobs === 0 && stats.lockedJobs === 0) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      stop.abort();
      await drained;
    }
    await this.channel.disconnect();
  }
}
