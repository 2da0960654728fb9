import { Schema, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { RateLimitCounter } from '../domain/keys/rate-limit.js';
import { ignoreExists, nativeCollection } from './accounts.js';

/** One key's count in one window (collection `rate_limits`, removed by a TTL index once stale). */
interface RateLimitDoc {
  /** `<key id>:<window start, ms>`. */
  _id: string;
  n: number;
  expiresAt: Date;
}

const schema = new Schema<RateLimitDoc>(
  {
    _id: { type: String, required: true },
    n: { type: Number, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'rate_limits', versionKey: false },
);
schema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

const DUPLICATE_KEY = 11000;

/**
 * The rate limit's shared count: one guarded `findOneAndUpdate` (`$inc` with an upsert) per request on
 * the usual path, on any MongoDB (no transaction). Only a refusal, or two first requests of a window
 * racing to create its document, costs a second round trip.
 */
export class MongoRateLimitCounter implements RateLimitCounter {
  private readonly model: Model<RateLimitDoc>;
  private readonly collection: Collection<RateLimitDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.RateLimit as Model<RateLimitDoc> | undefined) ?? connection.model<RateLimitDoc>('RateLimit', schema);
    this.collection = nativeCollection<RateLimitDoc>(connection, 'rate_limits');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async add(keyId: string, windowStart: Date, cost: number, limit: number, expiresAt: Date): Promise<{ accepted: boolean; count: number }> {
    const _id = `${keyId}:${windowStart.getTime()}`;
    const guard = { _id, n: { $lte: limit - cost } };
    // A cost over the whole limit never fits; the upsert would create the window with it.
    if (cost <= limit) {
      try {
        const doc = await this.collection.findOneAndUpdate(guard, { $inc: { n: cost }, $setOnInsert: { expiresAt } }, { upsert: true, returnDocument: 'after' });
        if (doc) return { accepted: true, count: doc.n };
      } catch (err) {
        // The window exists and the guard failed (the upsert then tries to insert a second one), or
        // another request created it meanwhile: one more guarded update, without insert, tells which.
        if ((err as { code?: number }).code !== DUPLICATE_KEY) throw err;
      }
      const doc = await this.collection.findOneAndUpdate(guard, { $inc: { n: cost } }, { returnDocument: 'after' });
      if (doc) return { accepted: true, count: doc.n };
    }
    const current = await this.collection.findOne({ _id }, { projection: { n: 1 } });
    return { accepted: false, count: current?.n ?? 0 };
  }
}
