import { Schema, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { PurchaseStore } from '../domain/billing/ports.js';
import type { PaidPurchase, PurchaseRecord, PurchaseRefund } from '../domain/billing/types.js';
import { ignoreExists, nativeCollection } from './accounts.js';

/** Stored shape of a purchase (collection `purchases`); `_id` is the session or PaymentIntent id: the unique key. */
export interface PurchaseDoc extends Omit<PurchaseRecord, 'id'> {
  _id: string;
}

const purchaseSchema = new Schema<PurchaseDoc>(
  {
    _id: { type: String },
    kind: { type: String, required: true },
    accountId: { type: String, required: true },
    credits: { type: Number, required: true },
    amount: { type: Number, required: true },
    currency: { type: String, required: true },
    paymentIntentId: { type: String, default: null },
    triggerId: { type: String, default: null },
    state: { type: String, required: true },
    createdAt: { type: Date, required: true },
    grantedAt: { type: Date, default: null },
    refunds: { type: Schema.Types.Mixed, default: [] },
  },
  { collection: 'purchases', versionKey: false },
);
purchaseSchema.index({ paymentIntentId: 1 }, { sparse: true });
purchaseSchema.index({ accountId: 1, createdAt: -1 });
purchaseSchema.index({ state: 1, createdAt: 1 });

/** Purchases on MongoDB: an upsert by id records each once; state changes are guarded updates. */
export class MongoPurchaseStore implements PurchaseStore {
  private readonly model: Model<PurchaseDoc>;
  private readonly collection: Collection<PurchaseDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.Purchase as Model<PurchaseDoc> | undefined) ?? connection.model<PurchaseDoc>('Purchase', purchaseSchema);
    this.collection = nativeCollection<PurchaseDoc>(connection, 'purchases');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async record(purchase: PaidPurchase, at: Date): Promise<PurchaseRecord> {
    const { id, ...rest } = purchase;
    const doc: Omit<PurchaseDoc, '_id'> = { ...rest, triggerId: rest.triggerId ?? null, state: 'pending', createdAt: at, grantedAt: null, refunds: [] };
    const stored = await this.collection.findOneAndUpdate({ _id: id }, { $setOnInsert: doc }, { upsert: true, returnDocument: 'after' }).catch(async (err: unknown) => {
      // Two first reports at once: one insert wins, the other reads it.
      if ((err as { code?: number }).code !== 11000) throw err;
      return this.collection.findOne({ _id: id });
    });
    if (!stored) throw new Error(`purchase ${id} vanished`);
    return toRecord(stored);
  }

  async open(purchase: PaidPurchase, at: Date): Promise<void> {
    const { id, ...rest } = purchase;
    const doc: Omit<PurchaseDoc, '_id'> = { ...rest, triggerId: null, state: 'open', createdAt: at, grantedAt: null, refunds: [] };
    await this.collection.updateOne({ _id: id }, { $setOnInsert: doc }, { upsert: true });
  }

  async find(id: string): Promise<PurchaseRecord | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc ? toRecord(doc) : null;
  }

  async markPaid(id: string, paymentIntentId: string | null): Promise<PurchaseRecord | null> {
    const doc = await this.collection.findOneAndUpdate({ _id: id, state: 'open' }, { $set: { state: 'pending', paymentIntentId } }, { returnDocument: 'after' });
    return doc ? toRecord(doc) : this.find(id);
  }

  async findByPaymentIntent(paymentIntentId: string): Promise<PurchaseRecord | null> {
    const doc = await this.collection.findOne({ paymentIntentId });
    return doc ? toRecord(doc) : null;
  }

  async markGranted(id: string, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: id, state: 'pending' }, { $set: { state: 'granted', grantedAt: at } });
  }

  async addRefund(id: string, refund: PurchaseRefund): Promise<void> {
    await this.collection.updateOne({ _id: id, 'refunds.id': { $ne: refund.id } }, { $push: { refunds: refund } });
  }

  async pending(before: Date, limit: number): Promise<PurchaseRecord[]> {
    return (await this.collection.find({ state: 'pending', createdAt: { $lt: before } }).limit(limit).toArray()).map(toRecord);
  }

  async listForAccount(accountId: string, limit: number): Promise<PurchaseRecord[]> {
    return (await this.collection.find({ accountId, state: { $ne: 'open' } }).sort({ createdAt: -1 }).limit(limit).toArray()).map(toRecord);
  }
}

function toRecord(doc: PurchaseDoc): PurchaseRecord {
  const { _id, ...rest } = doc;
  return { id: _id, ...rest, triggerId: rest.triggerId ?? null, refunds: rest.refunds ?? [] };
}
