import { Schema, type Connection, type Model } from 'mongoose';
import type { Collection, Filter } from 'mongodb';
import type { EmailThrottleStore } from '../domain/email/ports.js';
import { ignoreExists, nativeCollection } from './accounts.js';

/** The last sends to one subject (collection `email_throttle`): `to:<address hash>` or `ip:<address>`. */
interface EmailThrottleDoc {
  _id: string;
  /** Times of the last sends, oldest first, at most the limit's number of them. */
  sent: Date[];
  /** Forgotten once the newest send has left the window (TTL). */
  expiresAt: Date;
}

const schema = new Schema<EmailThrottleDoc>(
  {
    _id: { type: String, required: true },
    sent: { type: [Date], default: [] },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'email_throttle', versionKey: false },
);
schema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

const DUPLICATE_KEY = 11000;

/**
 * A sliding window in one document per subject: the times of its last `max` sends. A send fits when
 * there are fewer than `max` of them, or the oldest has left the window; the same update pushes it and
 * drops the oldest (`$push` with `$slice`). One guarded update, on any MongoDB.
 */
export class MongoEmailThrottleStore implements EmailThrottleStore {
  private readonly model: Model<EmailThrottleDoc>;
  private readonly collection: Collection<EmailThrottleDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.EmailThrottle as Model<EmailThrottleDoc> | undefined) ?? connection.model<EmailThrottleDoc>('EmailThrottle', schema);
    this.collection = nativeCollection<EmailThrottleDoc>(connection, 'email_throttle');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async take(subject: string, at: Date, windowStart: Date, max: number): Promise<{ taken: true } | { taken: false; oldest: Date }> {
    const expiresAt = new Date(at.getTime() + (at.getTime() - windowStart.getTime()));
    const fits: Filter<EmailThrottleDoc> = { _id: subject, $or: [{ [`sent.${max - 1}`]: { $exists: false } }, { 'sent.0': { $lte: windowStart } }] };
    const update = { $push: { sent: { $each: [at], $slice: -max } }, $set: { expiresAt } };
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        // Upserts a subject seen for the first time; an existing one that does not fit fails the
        // insert on its _id instead.
        if (await this.collection.findOneAndUpdate(fits, update, { upsert: true, returnDocument: 'after' })) return { taken: true };
      } catch (err) {
        if ((err as { code?: number }).code !== DUPLICATE_KEY) throw err;
      }
      const doc = await this.collection.findOne({ _id: subject });
      const oldest = doc?.sent[0];
      if (doc && doc.sent.length >= max && oldest && oldest > windowStart) return { taken: false, oldest };
    }
    throw new Error(`email throttle: could not count a send to ${subject}`);
  }
}
