import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { EmailOutboxStore, OutboxEntry } from '../domain/email/ports.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';

/** One email not sent yet (collection `email_outbox`), removed once it is. */
interface EmailOutboxDoc {
  _id: Types.ObjectId;
  kind: string;
  to: string;
  data: Record<string, string | number | boolean | null>;
  createdAt: Date;
  attempts: number;
  /** Until then a gateway is sending it (or it waits for its retry); after, any gateway may. */
  claimedUntil: Date;
}

const schema = new Schema<EmailOutboxDoc>(
  {
    kind: { type: String, required: true },
    to: { type: String, required: true },
    data: { type: Schema.Types.Mixed, default: {} },
    createdAt: { type: Date, required: true },
    attempts: { type: Number, required: true },
    claimedUntil: { type: Date, required: true },
  },
  { collection: 'email_outbox', versionKey: false, minimize: false },
);
schema.index({ claimedUntil: 1 });

export class MongoEmailOutboxStore implements EmailOutboxStore {
  private readonly model: Model<EmailOutboxDoc>;
  private readonly collection: Collection<EmailOutboxDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.EmailOutbox as Model<EmailOutboxDoc> | undefined) ?? connection.model<EmailOutboxDoc>('EmailOutbox', schema);
    this.collection = nativeCollection<EmailOutboxDoc>(connection, 'email_outbox');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async insert(entry: Omit<OutboxEntry, 'id' | 'attempts'>, claimedUntil: Date): Promise<OutboxEntry> {
    const doc: EmailOutboxDoc = { _id: new Types.ObjectId(), ...entry, data: { ...entry.data }, attempts: 1, claimedUntil };
    await this.collection.insertOne(doc);
    return toEntry(doc);
  }

  async claimDue(now: Date, claimedUntil: Date): Promise<OutboxEntry | null> {
    const doc = await this.collection.findOneAndUpdate({ claimedUntil: { $lte: now } }, { $set: { claimedUntil }, $inc: { attempts: 1 } }, { sort: { claimedUntil: 1 }, returnDocument: 'after' });
    return doc ? toEntry(doc) : null;
  }

  async retryAt(id: string, retryAt: Date): Promise<void> {
    const _id = toObjectId(id);
    if (_id) await this.collection.updateOne({ _id }, { $set: { claimedUntil: retryAt } });
  }

  async remove(id: string): Promise<void> {
    const _id = toObjectId(id);
    if (_id) await this.collection.deleteOne({ _id });
  }
}

function toEntry(d: EmailOutboxDoc): OutboxEntry {
  return { id: d._id.toHexString(), kind: d.kind, to: d.to, data: d.data, createdAt: d.createdAt, attempts: d.attempts };
}
