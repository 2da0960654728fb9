import { Agenda, type AgendaBackend, type JobParameters } from 'agenda';
import { MongoBackend } from '@agendajs/mongo-backend';
import { ObjectId, type Db } from 'mongodb';
import { z } from 'zod';
import type { ImageWorkQueue } from '../domain/jobs/records.js';
import { silentLogger, type Logger } from '../domain/logger.js';
import { currentTraceparent } from '../tracing/context.js';
import { QueueNotificationChannel } from './channel.js';
import { QueueErrorLog } from './queue-errors.js';

/** Queue collection shared by every gateway and worker process. */
export const QUEUE_COLLECTION = 'agendaJobs';
/** One queue entry per image. */
export const GENERATE_IMAGE = 'image.generate';
/** Periodic repair of crashed creates, pending refunds and vanished entries. */
export const SWEEP_JOBS = 'image-jobs.sweep';
/** Deletes images older than IMAGE_RETENTION: one recurring entry, run by one worker at a time. */
export const SWEEP_IMAGES = 'image-jobs.retention';

/** W3C trace context of the request that queued the work (tracing on); a malformed one is ignored. */
export const traceparentField = z
  .string()
  .regex(/^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/)
  .optional()
  .catch(undefined);

export const generateImagePayload = z.object({
  jobId: z.uuid(),
  index: z.number().int().min(0),
  traceparent: traceparentField,
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
  /** Background errors (polls, lock bookkeeping, change stream); a database outage is summarized. */
  log?: Logger;
  /** False while the database cannot be reached: a drain then stops waiting (default: always reachable). */
  databaseReachable?: () => boolean;
  /** Subscribes to the driver's reconnections (returns the unsubscribe): an outage's summary then ends. */
  reconnected?: (listener: () => void) => () => void;
}

/** Why close() stopped waiting for running work. */
export type DrainOutcome = 'drained' | 'timed out' | 'database unreachable';

/**
 * The Agenda-backed work queue. A gateway uses it to enqueue; a worker (in-process or standalone) also
 * starts it to process. One Agenda instance per process, so in-process enqueues wake the local worker.
 */
export class ImageQueue implements ImageWorkQueue {
  readonly agenda: Agenda;
  readonly channel: QueueNotificationChannel;
  readonly errors: QueueErrorLog;
  private readonly stopWatchingReconnections: () => void;

  private constructor(
    private readonly db: Db,
    readonly options: ImageQueueOptions,
    mongo: MongoBackend,
  ) {
    this.errors = new QueueErrorLog(options.log ?? silentLogger);
    this.channel = new QueueNotificationChannel(db, QUEUE_COLLECTION, options.notifications);
    this.channel.on('error', (err: unknown) => this.errors.report(err, 'changestream'));
    this.stopWatchingReconnections = options.reconnected?.(() => this.errors.recovered()) ?? (() => {});
    // Agenda calls unlockJob without awaiting it (a lock limit overshoot, an entry due later than the
    // next poll): in an outage its rejection would be unhandled. A lock left behind expires by itself.
    const repository = mongo.repository;
    const unlockJob = repository.unlockJob.bind(repository);
    repository.unlockJob = (job) => unlockJob(job).catch((err: unknown) => this.errors.report(err, 'unlock'));
    const getNextJobToRun = repository.getNextJobToRun.bind(repository);
    repository.getNextJobToRun = async (...args) => this.freshLock(await getNextJobToRun(...args));
    const backend: AgendaBackend = {
      name: mongo.name,
      repository,
      ownsConnection: false,
      // Connected by open(), where a failure reaches the caller (see there).
      connect: async () => {},
      disconnect: () => mongo.disconnect(),
    };
    this.agenda = new Agenda({
      backend,
      notificationChannel: this.channel,
      name: options.name,
      processEvery: options.pollIntervalMs,
      defaultLockLifetime: options.lockLifetimeMs,
      maxConcurrency: options.concurrency,
      defaultConcurrency: options.concurrency,
      // Finished entries are deleted: an image without an entry and not final is what the sweep requeues.
      removeOnComplete: true,
    });
    // Failed polls and lock writes (every poll while the database is down), failed job saves.
    this.agenda.on('error', (err: unknown) => this.errors.report(err, 'agenda'));
  }

  static async open(db: Db, options: ImageQueueOptions): Promise<ImageQueue> {
    // Agenda's constructor connects a backend without handling a failure: the rejection would be
    // unhandled and `ready` would never resolve. Connected here, a database that is down fails open().
    const mongo = new MongoBackend({ mongo: db, collection: QUEUE_COLLECTION });
    await mongo.connect();
    const queue = new ImageQueue(db, options, mongo);
    await queue.agenda.ready;
    // The sweep looks up an image's entries by job id.
    await db.collection(QUEUE_COLLECTION).createIndex({ 'data.jobId': 1 }, { name: 'imageJobId', sparse: true });
    return queue;
  }

  async enqueue(jobId: string, indexes: readonly number[]): Promise<void> {
    const traceparent = currentTraceparent();
    await Promise.all(indexes.map((index) => this.agenda.now<GenerateImagePayload>(GENERATE_IMAGE, traceparent ? { jobId, index, traceparent } : { jobId, index })));
  }

  /** A later run of one image (another attempt looks alive until `at`). */
  async enqueueAt(jobId: string, index: number, at: Date): Promise<void> {
    const traceparent = currentTraceparent();
    await this.agenda.schedule<GenerateImagePayload>(at, GENERATE_IMAGE, traceparent ? { jobId, index, traceparent } : { jobId, index });
  }

  /** Images waiting for a worker: entries due or scheduled, not locked (image_queue_depth). */
  depth(): Promise<number> {
    return this.db.collection(QUEUE_COLLECTION).countDocuments({ name: GENERATE_IMAGE, nextRunAt: { $ne: null }, lockedAt: null });
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
   * It also ends at the timeout, and as soon as the database is unreachable: a running image could
   * not store its result then, and its lock and heartbeat expire so that another worker retries it.
   */
  async close(drainTimeoutMs = 30_000): Promise<DrainOutcome> {
    this.stopWatchingReconnections();
    let outcome: DrainOutcome = 'drained';
    if (this.agenda.isActiveJobProcessor()) {
      const stop = new AbortController();
      const drained = this.agenda.drain({ signal: stop.signal, closeConnection: false });
      const deadline = Date.now() + drainTimeoutMs;
      const reachable = this.options.databaseReachable ?? (() => true);
      for (;;) {
        const load = this.localLoad();
        if (load.running === 0 && load.locked === 0) break;
        outcome = Date.now() >= deadline ? 'timed out' : reachable() ? 'drained' : 'database unreachable';
        if (outcome !== 'drained') {
          (this.options.log ?? silentLogger).warn({ ...load, reason: outcome }, 'stopped waiting for running images');
          break;
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      stop.abort();
      await drained;
    }
    await this.channel.disconnect();
    return outcome;
  }

  /**
   * Agenda stamps a lock with the time its query was issued, not the time it landed. A poll that waited
   * out part of an outage (server selection) lands with a lock that may already look expired, and
   * Agenda's job processor drops such an entry without freeing its lock slot: after `concurrency` of
   * them the worker never locks an image again. So a lock that lands old is renewed first (only if it
   * is still ours: the condition names its stamp); one that is no longer ours is not handed over.
   */
  private async freshLock(job: JobParameters | undefined): Promise<JobParameters | undefined> {
    if (!job?._id || !job.lockedAt) return job;
    const lockedAt = new Date(job.lockedAt);
    if (Date.now() - lockedAt.getTime() < this.options.lockLifetimeMs / 4) return job;
    const now = new Date();
    const renewed = await this.db.collection(QUEUE_COLLECTION).updateOne({ _id: new ObjectId(String(job._id)), lockedAt }, { $set: { lockedAt: now } });
    return renewed.modifiedCount === 1 ? { ...job, lockedAt: now } : undefined;
  }

  /**
   * Entries this process is running and has locked, from the job processor's memory. Its public
   * getRunningStats() also counts the queue in the database, which fails while it is unreachable,
   * exactly when a drain must not wait. test/images/recovery.test.ts (SIGTERM drains) fails if a
   * new Agenda renames these fields (the drain would then end at once).
   */
  private localLoad(): { running: number; locked: number } {
    const processor = (this.agenda as unknown as { jobProcessor?: { runningJobs?: unknown[]; lockedJobs?: unknown[] } }).jobProcessor;
    return { running: processor?.runningJobs?.length ?? 0, locked: processor?.lockedJobs?.length ?? 0 };
  }
}
