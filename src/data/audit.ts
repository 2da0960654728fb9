import { Types, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { AuditEntry, AuditEntryInput, AuditFilter, AuditStore } from '../domain/audit/types.js';
import { auditEntryModel, type AuditEntryDoc } from './models/audit-entry.js';
import { ignoreExists, nativeCollection } from './accounts.js';

/** Audit entries on MongoDB (collection `audit_entries`, 90-day TTL on createdAt). */
export class MongoAuditStore implements AuditStore {
  private readonly model: Model<AuditEntryDoc>;
  private readonly collection: Collection<AuditEntryDoc>;

  constructor(connection: Connection) {
    this.model = auditEntryModel(connection);
    this.collection = nativeCollection<AuditEntryDoc>(connection, this.model.collection.collectionName);
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async record(entry: AuditEntryInput, at: Date): Promise<void> {
    const doc: Omit<AuditEntryDoc, '_id'> = {
      event: entry.event,
      accountId: entry.accountId,
      userAgent: entry.userAgent ?? null,
      actor: entry.actor,
      ip: entry.ip,
      host: entry.host,
      keyId: entry.keyId ?? null,
      keyPrefix: entry.keyPrefix ?? null,
      amount: entry.amount ?? null,
      opId: entry.opId ?? null,
      details: entry.details ?? null,
      createdAt: at,
    };
    if (entry.opId) {
      // One entry per idempotent operation, however often it is retried.
      const _id = `${entry.event}:${entry.accountId}:${entry.opId}`;
      await this.collection.updateOne({ _id }, { $setOnInsert: doc }, { upsert: true });
    } else {
      await this.collection.insertOne({ _id: new Types.ObjectId(), ...doc });
    }
  }

  async *listForAccount(accountId: string): AsyncIterable<AuditEntry> {
    const cursor = this.collection.find({ accountId }).sort({ createdAt: 1, _id: 1 });
    for await (const doc of cursor) yield toEntry(doc);
  }

  async *query(accountId: string, filter: AuditFilter): AsyncIterable<AuditEntry> {
    const createdAt: Record<string, Date> = {};
    if (filter.from) createdAt.$gte = filter.from;
    if (filter.to) createdAt.$lt = filter.to;
    const cursor = this.collection
      .find({
        accountId,
        ...(filter.events?.length ? { event: { $in: [...filter.events] } } : {}),
        ...(filter.from || filter.to ? { createdAt } : {}),
      })
      .sort({ createdAt: -1, _id: -1 })
      .limit(filter.limit ?? 0);
    for await (const doc of cursor) yield toEntry(doc);
  }
}

function toEntry(doc: AuditEntryDoc): AuditEntry {
  return {
    id: String(doc._id),
    event: doc.event,
    accountId: doc.accountId,
    userAgent: doc.userAgent ?? null,
    actor: doc.actor,
    ip: doc.ip ?? null,
    host: doc.host,
    keyId: doc.keyId ?? null,
    keyPrefix: doc.keyPrefix ?? null,
    amount: doc.amount ?? null,
    opId: doc.opId ?? null,
    details: doc.details ?? null,
    createdAt: doc.createdAt,
  };
}
