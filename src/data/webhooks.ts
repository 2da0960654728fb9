import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import type { AttemptResult, DeliveryRecord, DeliveryStore, EndpointRecord, EndpointStore } from '../domain/webhooks/ports.js';
import type { WebhookEventType } from '../domain/webhooks/types.js';
import { nativeCollection } from './accounts.js';

type EndpointDoc = Omit<EndpointRecord, 'id'> & { _id: string };
type DeliveryDoc = Omit<DeliveryRecord, 'id'> & { _id: string };

/** Attempts kept per delivery (the schedule has 10; a resend starts its own list). */
const ATTEMPTS_KEPT = 50;
/** Deliveries are kept this long (the default schedule gives up after about 3 days), then the database drops them. */
export const DELIVERY_RETENTION_DAYS = 30;

/** Webhook endpoints on MongoDB (collection `webhookEndpoints`). */
export class MongoEndpointStore implements EndpointStore {
  private readonly collection: Collection<EndpointDoc>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<EndpointDoc>(connection, 'webhookEndpoints');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ accountId: 1, createdAt: 1 });
  }

  async insert(endpoint: EndpointRecord): Promise<void> {
    const { id, ...rest } = endpoint;
    await this.collection.insertOne({ _id: id, ...rest });
  }

  async listForAccount(accountId: string): Promise<EndpointRecord[]> {
    return (await this.collection.find({ accountId }).sort({ createdAt: 1, _id: 1 }).toArray()).map(toEndpoint);
  }

  async find(id: string): Promise<EndpointRecord | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc ? toEndpoint(doc) : null;
  }

  async subscribers(accountId: string, type: WebhookEventType): Promise<EndpointRecord[]> {
    return (await this.collection.find({ accountId, events: type, disabledAt: null }).toArray()).map(toEndpoint);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.collection.deleteOne({ _id: id, accountId })).deletedCount === 1;
  }

  async disable(id: string, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: id, disabledAt: null }, { $set: { disabledAt: at } });
  }
}

/** Webhook deliveries on MongoDB (collection `webhookDeliveries`); every change is one guarded update. */
export class MongoDeliveryStore implements DeliveryStore {
  private readonly collection: Collection<DeliveryDoc>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<DeliveryDoc>(connection, 'webhookDeliveries');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ accountId: 1, createdAt: -1 });
    // The sweep: pending deliveries by due time.
    await this.collection.createIndex({ status: 1, nextAttemptAt: 1 });
    await this.collection.createIndex({ createdAt: 1 }, { expireAfterSeconds: DELIVERY_RETENTION_DAYS * 86_400 });
  }

  async insertOnce(delivery: DeliveryRecord): Promise<boolean> {
    const { id, ...rest } = delivery;
    const res = await this.collection.updateOne({ _id: id }, { $setOnInsert: rest }, { upsert: true });
    return res.upsertedCount === 1;
  }

  async find(id: string): Promise<DeliveryRecord | null> {
    const doc = await this.collection.findOne({ _id: id });
    return doc ? toDelivery(doc) : null;
  }

  async recent(accountId: string, limit: number): Promise<DeliveryRecord[]> {
    return (await this.collection.find({ accountId }).sort({ createdAt: -1, _id: -1 }).limit(limit).toArray()).map(toDelivery);
  }

  async claim(id: string, now: Date, lockUntil: Date): Promise<DeliveryRecord | null> {
    const doc = await this.collection.findOneAndUpdate(
      { _id: id, status: 'pending', nextAttemptAt: { $lte: now }, $or: [{ lockedUntil: null }, { lockedUntil: { $lte: now } }] },
      { $set: { lockedUntil: lockUntil } },
      { returnDocument: 'after' },
    );
    return doc ? toDelivery(doc) : null;
  }

  async record(id: string, lockedUntil: Date, result: AttemptResult): Promise<boolean> {
    const res = await this.collection.updateOne(
      { _id: id, status: 'pending', lockedUntil },
      {
        $push: { attempts: { $each: [result.attempt], $slice: -ATTEMPTS_KEPT } },
        $set: { status: result.status, nextAttemptAt: result.nextAttemptAt, lockedUntil: null },
      },
    );
    return res.modifiedCount === 1;
  }

  async overdue(dueBefore: Date, now: Date, limit: number): Promise<DeliveryRecord[]> {
    const docs = await this.collection
      .find({ status: 'pending', nextAttemptAt: { $lte: dueBefore }, $or: [{ lockedUntil: null }, { lockedUntil: { $lte: now } }] })
      .sort({ nextAttemptAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map(toDelivery);
  }
}

function toEndpoint(doc: EndpointDoc): EndpointRecord {
  const { _id, ...rest } = doc;
  return { ...rest, id: _id, disabledAt: rest.disabledAt ?? null };
}

function toDelivery(doc: DeliveryDoc): DeliveryRecord {
  const { _id, ...rest } = doc;
  return { ...rest, id: _id, attempts: rest.attempts ?? [], nextAttemptAt: rest.nextAttemptAt ?? null, lockedUntil: rest.lockedUntil ?? null };
}
