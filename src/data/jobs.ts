import type { Connection, Model } from 'mongoose';
import type { JobRecord, JobStore } from '../domain/jobs/records.js';
import { jobModel, type JobDoc } from './models/job.js';

const NON_FINAL: JobDoc['status'][] = ['queued', 'running'];

/** JobStore on MongoDB: every state change is one guarded update (arrayFilters on the image's state and attempt). */
export class MongoJobStore implements JobStore {
  private readonly model: Model<JobDoc>;

  constructor(connection: Connection) {
    this.model = jobModel(connection);
  }

  async init(): Promise<void> {
    await this.model.createIndexes();
  }

  async insert(job: JobRecord): Promise<void> {
    await this.model.collection.insertOne(toDoc(job) as never);
  }

  async deleteUncharged(jobId: string): Promise<boolean> {
    const res = await this.model.deleteOne({ _id: jobId, charged: false });
    return res.deletedCount === 1;
  }

  async markCharged(jobId: string, now: Date): Promise<boolean> {
    const res = await this.model.updateOne({ _id: jobId, charged: false }, { $set: { charged: true, updatedAt: now } });
    return res.modifiedCount === 1;
  }

  async findForAccount(accountId: string, jobIds: readonly string[]): Promise<JobRecord[]> {
    const docs = await this.model.find({ _id: { $in: [...jobIds] }, accountId, charged: true }).lean<JobDoc[]>();
    return docs.map(toRecord);
  }

  async listForAccount(accountId: string, limit: number, after: { createdAt: Date; id: string } | null): Promise<JobRecord[]> {
    const filter: Record<string, unknown> = { accountId, charged: true };
    if (after) {
      filter.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, _id: { $lt: after.id } }];
    }
    const docs = await this.model.find(filter).sort({ createdAt: -1, _id: -1 }).limit(limit).lean<JobDoc[]>();
    return docs.map(toRecord);
  }

  async findById(jobId: string): Promise<JobRecord | null> {
    const doc = await this.model.findById(jobId).lean<JobDoc>();
    return doc ? toRecord(doc) : null;
  }

  async claimImage(jobId: string, index: number, now: Date, staleBefore: Date, heartbeatAt: Date): Promise<JobRecord | null> {
    const claimable = [{ status: 'queued' }, { status: 'running', heartbeatAt: { $lte: staleBefore } }];
    const doc = await this.model
      .findOneAndUpdate(
        { _id: jobId, charged: true, images: { $elemMatch: { index, $or: claimable } } },
        {
          $inc: { 'images.$[img].attempt': 1 },
          $set: {
            'images.$[img].status': 'running',
            'images.$[img].startedAt': now,
            'images.$[img].heartbeatAt': heartbeatAt,
            'images.$[img].error': null,
            // The job has a non-final image, so it is queued or running: this is queued → running.
            status: 'running',
            updatedAt: now,
          },
        },
        {
          arrayFilters: [{ 'img.index': index, $or: claimable.map((c) => prefix('img.', c)) }],
          new: true,
        },
      )
      .lean<JobDoc>();
    return doc ? toRecord(doc) : null;
  }

  async heartbeat(jobId: string, index: number, attempt: number, at: Date): Promise<boolean> {
    const res = await this.model.updateOne(
      { _id: jobId, images: { $elemMatch: { index, status: 'running', attempt } } },
      { $set: { 'images.$[img].heartbeatAt': at } },
      { arrayFilters: [{ 'img.index': index, 'img.status': 'running', 'img.attempt': attempt }] },
    );
    return res.matchedCount === 1;
  }

  async completeImage(jobId: string, index: number, attempt: number, fileId: string, now: Date): Promise<JobRecord | null> {
    return this.transition(jobId, index, attempt, now, {
      $set: { 'images.$[img].status': 'succeeded', 'images.$[img].fileId': fileId, 'images.$[img].finishedAt': now },
      $inc: { succeededImages: 1 },
    });
  }

  async failImage(jobId: string, index: number, attempt: number, error: string, now: Date): Promise<JobRecord | null> {
    return this.transition(jobId, index, attempt, now, {
      $set: {
        'images.$[img].status': 'failed',
        'images.$[img].error': error,
        'images.$[img].refund': 'pending',
        'images.$[img].finishedAt': now,
      },
      $inc: { failedImages: 1 },
    });
  }

  async releaseImage(jobId: string, index: number, attempt: number, error: string, now: Date): Promise<boolean> {
    const doc = await this.transition(jobId, index, attempt, now, {
      $set: { 'images.$[img].status': 'queued', 'images.$[img].error': error, 'images.$[img].heartbeatAt': null },
    });
    return doc !== null;
  }

  async markRefunded(jobId: string, index: number, now: Date): Promise<JobRecord | null> {
    const doc = await this.model
      .findOneAndUpdate(
        { _id: jobId, images: { $elemMatch: { index, refund: 'pending' } } },
        { $set: { 'images.$[img].refund': 'done', updatedAt: now }, $inc: { creditsRefunded: 1 } },
        { arrayFilters: [{ 'img.index': index, 'img.refund': 'pending' }], new: true },
      )
      .lean<JobDoc>();
    return doc ? toRecord(doc) : null;
  }

  async finalize(jobId: string, status: 'completed' | 'failed', now: Date): Promise<boolean> {
    const res = await this.model.updateOne(
      { _id: jobId, status: { $in: NON_FINAL } },
      { $set: { status, completedAt: now, updatedAt: now } },
    );
    return res.modifiedCount === 1;
  }

  async findUncharged(createdBefore: Date, limit: number): Promise<JobRecord[]> {
    const docs = await this.model.find({ charged: false, createdAt: { $lte: createdBefore } }).limit(limit).lean<JobDoc[]>();
    return docs.map(toRecord);
  }

  async findStalled(updatedBefore: Date, limit: number): Promise<JobRecord[]> {
    const docs = await this.model
      .find({ status: { $in: NON_FINAL }, charged: true, updatedAt: { $lte: updatedBefore } })
      .sort({ updatedAt: 1 })
      .limit(limit)
      .lean<JobDoc[]>();
    return docs.map(toRecord);
  }

  /** One guarded update of a running image's current attempt; the job document after it, or null. */
  private async transition(
    jobId: string,
    index: number,
    attempt: number,
    now: Date,
    update: { $set: Record<string, unknown>; $inc?: Record<string, number> },
  ): Promise<JobRecord | null> {
    const doc = await this.model
      .findOneAndUpdate(
        { _id: jobId, images: { $elemMatch: { index, status: 'running', attempt } } },
        { ...update, $set: { ...update.$set, updatedAt: now } },
        { arrayFilters: [{ 'img.index': index, 'img.status': 'running', 'img.attempt': attempt }], new: true },
      )
      .lean<JobDoc>();
    return doc ? toRecord(doc) : null;
  }
}

function prefix(p: string, cond: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(cond).map(([k, v]) => [p + k, v]));
}

function toDoc(job: JobRecord): JobDoc {
  const { id, ...rest } = job;
  return { _id: id, ...rest };
}

function toRecord(doc: JobDoc): JobRecord {
  const { _id, ...rest } = doc;
  return {
    id: _id,
    ...rest,
    completedAt: rest.completedAt ?? null,
    images: rest.images.map((i) => ({
      ...i,
      fileId: i.fileId ?? null,
      error: i.error ?? null,
      startedAt: i.startedAt ?? null,
      heartbeatAt: i.heartbeatAt ?? null,
      finishedAt: i.finishedAt ?? null,
    })),
  };
}
