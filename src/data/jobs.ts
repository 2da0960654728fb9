import type { Collection } from 'mongodb';
import type { Connection, Model } from 'mongoose';
import type { ImageRecord, ImageTransition, JobRecord, JobStore, StoredImageRef } from '../domain/jobs/records.js';
import type { FinalJobStatus } from '../domain/jobs/types.js';
import { jobModel, type JobDoc } from './models/job.js';

const NON_FINAL: JobDoc['status'][] = ['queued', 'running'];

/** JobStore on MongoDB: every state change is one guarded update (on the image's state and attempt). */
export class MongoJobStore implements JobStore {
  private readonly model: Model<JobDoc>;
  /** The driver's collection, for the hot per-image updates: no casting and document layer. */
  private readonly raw: Collection<JobDoc>;

  constructor(connection: Connection) {
    this.model = jobModel(connection);
    this.raw = connection.db!.collection<JobDoc>('jobs');
  }

  async init(): Promise<void> {
    await this.model.createIndexes();
  }

  async insert(job: JobRecord): Promise<void> {
    if (job.images.some((img, i) => img.index !== i)) throw new Error('images must be stored in index order');
    await this.model.collection.insertOne(toDoc(job) as never);
  }

  async deleteUncharged(jobId: string): Promise<boolean> {
    const res = await this.model.deleteOne({ _id: jobId, charged: false });
    return res.deletedCount === 1;
  }

  async markCharged(jobId: string, now: Date): Promise<boolean> {
    const res = await this.model.updateOne({ _id: jobId, charged: false, withdrawing: { $ne: true } }, { $set: { charged: true }, $max: { updatedAt: now } });
    return res.modifiedCount === 1;
  }

  async beginWithdrawal(jobId: string): Promise<boolean> {
    const res = await this.model.updateOne({ _id: jobId, charged: false }, { $set: { withdrawing: true } });
    return res.matchedCount === 1;
  }

  async findByRequest(accountId: string, ref: string): Promise<JobRecord[]> {
    const docs = await this.model.find({ request: ref, accountId }).sort({ createdAt: 1 }).lean<JobDoc[]>();
    return docs.map(toJobRecord);
  }

  async findForAccount(accountId: string, jobIds: readonly string[]): Promise<JobRecord[]> {
    const docs = await this.model.find({ _id: { $in: [...jobIds] }, accountId, charged: true }).lean<JobDoc[]>();
    return docs.map(toJobRecord);
  }

  async listForAccount(accountId: string, limit: number, after: { createdAt: Date; id: string } | null): Promise<JobRecord[]> {
    const filter: Record<string, unknown> = { accountId, charged: true };
    if (after) {
      filter.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after.id } }];
    }
    const docs = await this.model.find(filter).sort({ createdAt: -1, _id: -1 }).limit(limit).lean<JobDoc[]>();
    return docs.map(toJobRecord);
  }

  async findById(jobId: string): Promise<JobRecord | null> {
    const doc = await this.model.findById(jobId).lean<JobDoc>();
    return doc ? toJobRecord(doc) : null;
  }

  async claimImage(jobId: string, index: number, now: Date, staleBefore: Date, heartbeatAt: Date): Promise<ImageTransition | null> {
    const at = imagePath(index);
    const doc = await this.raw.findOneAndUpdate(
      {
        _id: jobId,
        charged: true,
        // A job with a cancel requested starts nothing more (null also matches documents without the field).
        cancelRequestedAt: null,
        $or: [{ [`${at}.status`]: 'queued' }, { [`${at}.status`]: 'running', [`${at}.heartbeatAt`]: { $lte: staleBefore } }],
      },
      {
        $inc: { [`${at}.attempt`]: 1 },
        $set: {
          [`${at}.status`]: 'running',
          [`${at}.startedAt`]: now,
          [`${at}.heartbeatAt`]: heartbeatAt,
          [`${at}.error`]: null,
          // The job has a non-final image, so it is queued or running: this is queued → running.
          status: 'running',
        },
        $max: { updatedAt: now },
      },
      { returnDocument: 'after', projection: oneImage(index) },
    );
    return doc ? toTransition(doc) : null;
  }

  async heartbeat(jobId: string, index: number, attempt: number, at: Date): Promise<boolean> {
    const res = await this.raw.updateOne({ _id: jobId, ...runningGuard(index, attempt) }, { $set: { [`${imagePath(index)}.heartbeatAt`]: at } });
    return res.matchedCount === 1;
  }

  async completeImage(jobId: string, index: number, attempt: number, stored: StoredImageRef, now: Date): Promise<ImageTransition | null> {
    const { fileId, contentType, width, height } = stored;
    return this.transition(jobId, index, attempt, now, { status: 'succeeded', fileId, contentType, width, height, finishedAt: now }, { succeededImages: 1 }, { oldestStoredAt: now });
  }

  async failImage(jobId: string, index: number, attempt: number, error: string, now: Date): Promise<ImageTransition | null> {
    return this.transition(jobId, index, attempt, now, { status: 'failed', error, refund: 'pending', finishedAt: now }, { failedImages: 1 });
  }

  async releaseImage(jobId: string, index: number, attempt: number, error: string, now: Date): Promise<ImageTransition | null> {
    return this.transition(jobId, index, attempt, now, { status: 'queued', error, heartbeatAt: null });
  }

  async markRefunded(jobId: string, index: number, now: Date): Promise<ImageTransition | null> {
    const at = imagePath(index);
    const doc = await this.raw.findOneAndUpdate(
      { _id: jobId, [`${at}.refund`]: 'pending' },
      { $set: { [`${at}.refund`]: 'done' }, $max: { updatedAt: now }, $inc: { creditsRefunded: 1 } },
      { returnDocument: 'after', projection: oneImage(index) },
    );
    return doc ? toTransition(doc) : null;
  }

  async finalize(jobId: string, status: FinalJobStatus, now: Date): Promise<JobRecord | null> {
    const doc = await this.raw.findOneAndUpdate(
      { _id: jobId, status: { $in: NON_FINAL }, cancelRequestedAt: status === 'canceled' ? { $ne: null } : null },
      { $set: { status, completedAt: now }, $max: { updatedAt: now } },
      { returnDocument: 'after' },
    );
    return doc ? toJobRecord(doc) : null;
  }

  async requestCancel(jobId: string, accountId: string, now: Date): Promise<JobRecord | null> {
    const owned = { _id: jobId, accountId, charged: true };
    const doc = await this.raw.findOneAndUpdate(
      { ...owned, status: { $in: NON_FINAL }, cancelRequestedAt: null },
      { $set: { cancelRequestedAt: now }, $max: { updatedAt: now } },
      { returnDocument: 'after' },
    );
    // Already final, or already asked: the job as it is.
    const current = doc ?? (await this.raw.findOne(owned));
    return current ? toJobRecord(current) : null;
  }

  async cancelImage(jobId: string, index: number, staleBefore: Date | null, now: Date): Promise<ImageTransition | null> {
    const at = imagePath(index);
    const states: Record<string, unknown>[] = [{ [`${at}.status`]: 'queued' }];
    if (staleBefore) states.push({ [`${at}.status`]: 'running', [`${at}.heartbeatAt`]: { $lte: staleBefore } });
    const doc = await this.raw.findOneAndUpdate(
      { _id: jobId, cancelRequestedAt: { $ne: null }, [`${at}.index`]: index, $or: states },
      {
        $set: { [`${at}.status`]: 'canceled', [`${at}.refund`]: 'pending', [`${at}.finishedAt`]: now },
        $max: { updatedAt: now },
        $inc: { canceledImages: 1 },
      },
      { returnDocument: 'after', projection: oneImage(index) },
    );
    return doc ? toTransition(doc) : null;
  }

  async findUncharged(createdBefore: Date, limit: number): Promise<JobRecord[]> {
    const docs = await this.model.find({ charged: false, createdAt: { $lte: createdBefore } }).limit(limit).lean<JobDoc[]>();
    return docs.map(toJobRecord);
  }

  async findStalled(updatedBefore: Date, limit: number): Promise<JobRecord[]> {
    const docs = await this.model
      .find({ status: { $in: NON_FINAL }, charged: true, updatedAt: { $lte: updatedBefore } })
      .sort({ updatedAt: 1 })
      .limit(limit)
      .lean<JobDoc[]>();
    return docs.map(toJobRecord);
  }

  async findRetained(cutoff: Date, limit: number): Promise<JobRecord[]> {
    const docs = await this.model
      .find({ $or: [{ oldestStoredAt: { $lte: cutoff } }, { oldestStoredAt: { $exists: false }, retentionSwept: { $ne: true }, completedAt: { $lte: cutoff } }] })
      .limit(limit)
      .lean<JobDoc[]>();
    return docs.map(toJobRecord);
  }

  async expireImage(jobId: string, index: number, fileId: string, cutoff: Date, now: Date): Promise<boolean> {
    const at = imagePath(index);
    const res = await this.raw.updateOne(
      { _id: jobId, [`${at}.index`]: index, [`${at}.status`]: 'succeeded', [`${at}.fileId`]: fileId, [`${at}.expiredAt`]: null, [`${at}.finishedAt`]: { $lte: cutoff } },
      { $set: { [`${at}.expiredAt`]: now }, $max: { updatedAt: now } },
    );
    return res.modifiedCount === 1;
  }

  async forgetFile(jobId: string, index: number, fileId: string): Promise<void> {
    const at = imagePath(index);
    await this.raw.updateOne({ _id: jobId, [`${at}.fileId`]: fileId, [`${at}.expiredAt`]: { $ne: null } }, { $set: { [`${at}.fileId`]: null } });
  }

  async setOldestStored(jobId: string, updatedAt: Date, oldest: Date | null): Promise<void> {
    // Nothing stored: the field goes (a later success's $min sets it again; null would stay the minimum).
    const update = oldest ? { $set: { oldestStoredAt: oldest } } : { $unset: { oldestStoredAt: '' as const }, $set: { retentionSwept: true } };
    await this.raw.updateOne({ _id: jobId, updatedAt }, update);
  }

  /** One guarded update of a running image's current attempt; the job and image after it, or null. */
  private async transition(
    jobId: string,
    index: number,
    attempt: number,
    now: Date,
    fields: Record<string, unknown>,
    counters?: Record<string, number>,
    lower?: Record<string, Date>,
  ): Promise<ImageTransition | null> {
    const at = imagePath(index);
    const $set: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(fields)) $set[`${at}.${k}`] = v;
    const update: Record<string, unknown> = { $set, $max: { updatedAt: now } };
    if (counters) update.$inc = counters;
    if (lower) update.$min = lower;
    const doc = await this.raw.findOneAndUpdate({ _id: jobId, ...runningGuard(index, attempt) }, update, {
      returnDocument: 'after',
      projection: oneImage(index),
    });
    return doc ? toTransition(doc) : null;
  }
}

/**
 * Path of an image inside the job document. `images[i].index === i` always holds (the array is written
 * once, in prompt order, and never reordered), so guards and updates address the element by position:
 * one atomic update guarded on the element's own fields, as `arrayFilters` would be, without a scan of
 * the array to find the element on every state change.
 */
function imagePath(index: number): string {
  if (!Number.isInteger(index) || index < 0) throw new Error(`invalid image index ${index}`);
  return `images.${index}`;
}

/** The image is running the given attempt. */
function runningGuard(index: number, attempt: number): Record<string, unknown> {
  const at = imagePath(index);
  return { [`${at}.index`]: index, [`${at}.status`]: 'running', [`${at}.attempt`]: attempt };
}

/** Every field of the job, but of its images only the one at `index`. */
function oneImage(index: number): Record<string, unknown> {
  return { images: { $slice: [index, 1] } };
}

/** A document read with `oneImage`: the job's own fields and its only image. */
function toTransition(doc: JobDoc): ImageTransition {
  const { images, ...job } = toJobRecord(doc);
  return { job, image: images[0] };
}

function toDoc(job: JobRecord): JobDoc {
  const { id, ...rest } = job;
  return { _id: id, ...rest };
}

/** The stored document as the domain's JobRecord (`_id` → `id`; absent optional fields → null). */
export function toJobRecord(doc: JobDoc): JobRecord {
  const { _id, ...rest } = doc;
  return {
    ...rest,
    id: String(_id),
    // Jobs stored before cancellation existed have neither field.
    canceledImages: rest.canceledImages ?? 0,
    cancelRequestedAt: rest.cancelRequestedAt ?? null,
    completedAt: rest.completedAt ?? null,
    images: (rest.images ?? []).map(toImage),
  };
}

function toImage(i: JobDoc['images'][number]): ImageRecord {
  return {
    ...i,
    fileId: i.fileId ?? null,
    expiredAt: i.expiredAt ?? null,
    error: i.error ?? null,
    startedAt: i.startedAt ?? null,
    heartbeatAt: i.heartbeatAt ?? null,
    finishedAt: i.finishedAt ?? null,
  };
}
