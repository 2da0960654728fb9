import { Types, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { KeyRecord, KeyStore } from '../domain/keys/records.js';
import { apiKeyModel, type ApiKeyDoc } from './models/api-key.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';

/** API keys on MongoDB (collection `api_keys`). */
export class MongoKeyStore implements KeyStore {
  private readonly model: Model<ApiKeyDoc>;
  readonly collection: Collection<ApiKeyDoc>;

  constructor(connection: Connection) {
    this.model = apiKeyModel(connection);
    this.collection = nativeCollection<ApiKeyDoc>(connection, this.model.collection.collectionName);
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async insert(key: Omit<KeyRecord, 'id' | 'lastUsedAt' | 'deletedAt'>): Promise<KeyRecord> {
    const accountId = toObjectId(key.accountId);
    if (!accountId) throw new Error(`not an account id: ${key.accountId}`);
    const doc: ApiKeyDoc = {
      _id: new Types.ObjectId(),
      accountId,
      name: key.name,
      hash: key.hash,
      prefix: key.prefix,
      createdAt: key.createdAt,
      lastUsedAt: null,
      deletedAt: null,
      updatedAt: key.createdAt,
    };
    // Validated by the mongoose schema, written by the driver.
    await this.model.validate(doc);
    await this.collection.insertOne(doc);
    return toRecord(doc);
  }

  async findByHash(hash: string): Promise<KeyRecord | null> {
    const doc = await this.collection.findOne({ hash });
    return doc ? toRecord(doc) : null;
  }

  async findById(keyId: string): Promise<KeyRecord | null> {
    const _id = toObjectId(keyId);
    const doc = _id ? await this.collection.findOne({ _id }) : null;
    return doc ? toRecord(doc) : null;
  }

  async listForAccount(accountId: string): Promise<KeyRecord[]> {
    const _id = toObjectId(accountId);
    if (!_id) return [];
    const docs = await this.collection.find({ accountId: _id }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(toRecord);
  }

  async softDelete(keyId: string, at: Date): Promise<KeyRecord | null> {
    const _id = toObjectId(keyId);
    if (!_id) return null;
    const changed = await this.collection.findOneAndUpdate(
      { _id, deletedAt: null },
      { $set: { deletedAt: at, updatedAt: at } },
      { returnDocument: 'after' },
    );
    return changed ? toRecord(changed) : this.findById(keyId);
  }

  async recordUse(uses: readonly { keyId: string; at: Date }[]): Promise<void> {
    const ops = uses.flatMap(({ keyId, at }) => {
      const _id = toObjectId(keyId);
      // $max: a late or out-of-order write never moves lastUsedAt back. updatedAt is left alone: a use
      // is not a change other instances need to hear about.
      return _id ? [{ updateOne: { filter: { _id }, update: { $max: { lastUsedAt: at } } } }] : [];
    });
    if (ops.length) await this.collection.bulkWrite(ops, { ordered: false });
  }
}

function toRecord(doc: ApiKeyDoc): KeyRecord {
  return {
    id: doc._id.toHexString(),
    accountId: doc.accountId.toHexString(),
    name: doc.name,
    hash: doc.hash,
    prefix: doc.prefix,
    createdAt: doc.createdAt,
    lastUsedAt: doc.lastUsedAt ?? null,
    deletedAt: doc.deletedAt ?? null,
  };
}
