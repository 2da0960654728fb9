import { Schema, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { IdempotencyRecord, IdempotencyStore, StoredOutcome } from '../domain/idempotency/service.js';
import { ignoreExists, nativeCollection } from './accounts.js';

/** Stored shape (collection `idempotency_keys`, removed by a TTL index after 24 h). */
interface IdempotencyDoc {
  _id: string;
  fingerprint: string;
  state: 'running' | 'done';
  outcome: StoredOutcome | null;
  ref?: string;
  lockedUntil: Date;
  expiresAt: Date;
}

const schema = new Schema<IdempotencyDoc>(
  {
    _id: { type: String, required: true },
    fingerprint: { type: String, required: true },
    state: { type: String, enum: ['running', 'done'], required: true },
    outcome: { type: Schema.Types.Mixed, default: null },
    ref: { type: String },
    lockedUntil: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'idempotency_keys', versionKey: false },
);
schema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

const DUPLICATE_KEY = 11000;

export class MongoIdempotencyStore implements IdempotencyStore {
  private readonly model: Model<IdempotencyDoc>;
  private readonly collection: Collection<IdempotencyDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.IdempotencyKey as Model<IdempotencyDoc> | undefined) ?? connection.model<IdempotencyDoc>('IdempotencyKey', schema);
    this.collection = nativeCollection<IdempotencyDoc>(connection, 'idempotency_keys');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async claim(record: IdempotencyRecord): Promise<IdempotencyRecord | null> {
    const { id, ...rest } = record;
    try {
      await this.collection.insertOne({ _id: id, ...rest });
      return null;
    } catch (err) {
      if ((err as { code?: number }).code !== DUPLICATE_KEY) throw err;
    }
    const doc = await this.collection.findOne({ _id: id });
    // Gone between the insert and the read (released, or expired): claim it again.
    if (!doc) return this.claim(record);
    const { _id, ...stored } = doc;
    return { id: _id, ...stored };
  }

  async takeOver(id: string, now: Date, lockedUntil: Date): Promise<boolean> {
    const res = await this.collection.updateOne({ _id: id, state: 'running', lockedUntil: { $lte: now } }, { $set: { lockedUntil } });
    return res.modifiedCount === 1;
  }

  async complete(id: string, outcome: StoredOutcome): Promise<void> {
    await this.collection.updateOne({ _id: id }, { $set: { state: 'done', outcome } });
  }

  async unlock(id: string, now: Date): Promise<void> {
    await this.collection.updateOne({ _id: id, state: 'running' }, { $set: { lockedUntil: now } });
  }
}
