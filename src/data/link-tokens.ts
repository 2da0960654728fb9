import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Collection, Filter } from 'mongodb';
import type { LinkPayload, LinkPurpose, LinkTokenRecord, LinkTokenStore } from '../domain/links/records.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';

/** One link token (collection `link_tokens`): verification, reset and invitation links alike. */
interface LinkTokenDoc {
  _id: Types.ObjectId;
  hash: string;
  purpose: LinkPurpose;
  payload: Record<string, string | number | boolean | null>;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

const schema = new Schema<LinkTokenDoc>(
  {
    hash: { type: String, required: true },
    purpose: { type: String, required: true },
    payload: { type: Schema.Types.Mixed, default: {} },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
    usedAt: { type: Date, default: null },
  },
  { collection: 'link_tokens', versionKey: false, minimize: false },
);
schema.index({ hash: 1 }, { unique: true });
schema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });
schema.index({ purpose: 1, 'payload.accountId': 1, createdAt: -1 });
schema.index({ purpose: 1, 'payload.userId': 1, createdAt: -1 });

export class MongoLinkTokenStore implements LinkTokenStore {
  private readonly model: Model<LinkTokenDoc>;
  private readonly collection: Collection<LinkTokenDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.LinkToken as Model<LinkTokenDoc> | undefined) ?? connection.model<LinkTokenDoc>('LinkToken', schema);
    this.collection = nativeCollection<LinkTokenDoc>(connection, 'link_tokens');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async insert(record: Omit<LinkTokenRecord, 'id'>): Promise<LinkTokenRecord> {
    const doc: LinkTokenDoc = { _id: new Types.ObjectId(), ...record, payload: { ...record.payload } };
    await this.collection.insertOne(doc);
    return toRecord(doc);
  }

  async findUsable(hash: string, purpose: LinkPurpose, now: Date): Promise<LinkTokenRecord | null> {
    const doc = await this.collection.findOne(usable({ hash, purpose }, now));
    return doc ? toRecord(doc) : null;
  }

  async consume(hash: string, purpose: LinkPurpose, now: Date): Promise<LinkTokenRecord | null> {
    const doc = await this.collection.findOneAndUpdate(usable({ hash, purpose }, now), { $set: { usedAt: now } }, { returnDocument: 'after' });
    return doc ? toRecord(doc) : null;
  }

  async listUsable(purpose: LinkPurpose, match: LinkPayload, now: Date): Promise<LinkTokenRecord[]> {
    // _id after createdAt: of two tokens issued in the same millisecond, the later insert is newest.
    const docs = await this.collection.find(usable({ purpose, ...payloadFilter(match) }, now)).sort({ createdAt: -1, _id: -1 }).limit(500).toArray();
    return docs.map(toRecord);
  }

  async revoke(id: string, purpose: LinkPurpose, match: LinkPayload, now: Date): Promise<LinkTokenRecord | null> {
    const _id = toObjectId(id);
    if (!_id) return null;
    const doc = await this.collection.findOneAndUpdate(usable({ _id, purpose, ...payloadFilter(match) }, now), { $set: { usedAt: now } }, { returnDocument: 'after' });
    return doc ? toRecord(doc) : null;
  }

  async revokeAll(purpose: LinkPurpose, match: LinkPayload, now: Date): Promise<number> {
    return (await this.collection.updateMany(usable({ purpose, ...payloadFilter(match) }, now), { $set: { usedAt: now } })).modifiedCount;
  }
}

function usable(filter: Filter<LinkTokenDoc>, now: Date): Filter<LinkTokenDoc> {
  return { ...filter, usedAt: null, expiresAt: { $gt: now } };
}

function payloadFilter(match: LinkPayload): Record<string, unknown> {
  return Object.fromEntries(Object.entries(match).map(([k, v]) => [`payload.${k}`, v]));
}

function toRecord(d: LinkTokenDoc): LinkTokenRecord {
  return { id: d._id.toHexString(), hash: d.hash, purpose: d.purpose, payload: d.payload, createdAt: d.createdAt, expiresAt: d.expiresAt, usedAt: d.usedAt ?? null };
}
