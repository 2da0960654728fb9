import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import type { JobRecord } from '../domain/jobs/records.js';
import type { JobEventOutbox } from '../domain/webhooks/ports.js';
import { EVENT_JOB_STATUSES } from '../domain/webhooks/types.js';
import { toJobRecord } from './jobs.js';
import type { JobDoc } from './models/job.js';

/**
 * Jobs are inserted with `eventPending: true`: whichever update makes a job final (completed, failed,
 * canceled, by any code path) thereby makes its webhook event due, with no second write to lose.
 * Publishing clears the flag; the sweep publishes final jobs whose flag a crash left set.
 */
export class MongoJobEventOutbox implements JobEventOutbox {
  private readonly collection: Collection<JobDoc>;

  constructor(connection: Connection) {
    if (!connection.db) throw new Error('the database connection is not open');
    this.collection = connection.db.collection<JobDoc>('jobs');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ eventPending: 1, status: 1, updatedAt: 1 }, { sparse: true, name: 'eventPending' });
  }

  async pending(jobId: string): Promise<JobRecord | null> {
    const doc = await this.collection.findOne({ _id: jobId, eventPending: true, status: { $in: [...EVENT_JOB_STATUSES] as JobDoc['status'][] } });
    return doc ? toJobRecord(doc) : null;
  }

  async overdue(statuses: readonly string[], before: Date, limit: number): Promise<JobRecord[]> {
    const docs = await this.collection
      .find({ eventPending: true, status: { $in: [...statuses] as JobDoc['status'][] }, updatedAt: { $lte: before } })
      .limit(limit)
      .toArray();
    return docs.map(toJobRecord);
  }

  async markPublished(jobId: string, status: string): Promise<void> {
    await this.collection.updateOne({ _id: jobId, eventPending: true, status: status as JobDoc['status'] }, { $unset: { eventPending: '' } });
  }
}
