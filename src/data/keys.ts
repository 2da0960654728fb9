import { Types, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { KeyPermission } from '../domain/keys/permissions.js';
import type { KeyRecord, KeySettingsChange, KeyStore, NewKey } from '../domain/keys/records.js';
import type { KeyExpiryStore } from '../domain/keys/sweep.js';
import { apiKeyModel, type ApiKeyDoc } from './models/api-key.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';

/** API keys on MongoDB (collection `api_keys`). */
export class MongoKeyStore implements KeyStore, KeyExpiryStore {
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

  async insert(key: NewKey): Promise<KeyRecord> {
    const accountId = toObjectId(key.accountId);
    if (!accountId) throw new Error(`not an account id: ${key.accountId}`);
    const limit = key.creditLimit ?? null;
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
      expiresAt: key.expiresAt ?? null,
      creditLimit: limit,
      creditsLeft: limit,
      refill: limit === null ? null : (key.refill ?? null),
      refilledFor: null,
      rateLimitPerMinute: key.rateLimitPerMinute ?? null,
      ...(key.permissions ? { permissions: [...key.permissions] } : {}),
      rolledFrom: key.rolledFrom ? toObjectId(key.rolledFrom) : null,
      expiringNotifiedAt: null,
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

  async updateSettings(
    keyId: string,
    expected: Pick<KeyRecord, 'expiresAt' | 'creditLimit' | 'creditsLeft'>,
    change: KeySettingsChange & { creditsLeft?: number | null; refilledFor?: string | null },
    at: Date,
  ): Promise<KeyRecord | null> {
    const _id = toObjectId(keyId);
    if (!_id) return null;
    const $set: Record<string, unknown> = { updatedAt: at };
    for (const [field, value] of Object.entries(change)) if (value !== undefined) $set[field] = value;
    // A new expiry deserves its own key.expiring notice.
    if (change.expiresAt !== undefined && !sameTime(change.expiresAt, expected.expiresAt)) $set.expiringNotifiedAt = null;
    const update = change.permissions === null ? { $set: omit($set, 'permissions'), $unset: { permissions: '' as const } } : { $set };
    const changed = await this.collection.findOneAndUpdate(
      { _id, deletedAt: null, expiresAt: expected.expiresAt ?? null, creditLimit: expected.creditLimit ?? null, creditsLeft: expected.creditsLeft ?? null },
      update,
      { returnDocument: 'after' },
    );
    return changed ? toRecord(changed) : null;
  }

  async expireBy(keyId: string, at: Date, now: Date): Promise<KeyRecord | null> {
    const _id = toObjectId(keyId);
    if (!_id) return null;
    const changed = await this.collection.findOneAndUpdate(
      { _id, deletedAt: null, $or: [{ expiresAt: null }, { expiresAt: { $exists: false } }, { expiresAt: { $gt: at } }] },
      { $set: { expiresAt: at, updatedAt: now, expiringNotifiedAt: null } },
      { returnDocument: 'after' },
    );
    return changed ? toRecord(changed) : this.findById(keyId);
  }

  async expiringUnannounced(now: Date, until: Date, limit: number): Promise<KeyRecord[]> {
    const docs = await this.collection
      .find({ expiresAt: { $gt: now, $lte: until }, deletedAt: null, expiringNotifiedAt: null })
      .sort({ expiresAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map(toRecord);
  }

  async markExpiringAnnounced(keyId: string, expiresAt: Date, at: Date): Promise<boolean> {
    const _id = toObjectId(keyId);
    if (!_id) return false;
    // Not updatedAt: an announcement is not a change of settings.
    const res = await this.collection.updateOne({ _id, expiresAt, expiringNotifiedAt: null }, { $set: { expiringNotifiedAt: at } });
    return res.modifiedCount === 1;
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
    updatedAt: doc.updatedAt,
    expiresAt: doc.expiresAt ?? null,
    creditLimit: doc.creditLimit ?? null,
    creditsLeft: doc.creditLimit == null ? null : (doc.creditsLeft ?? doc.creditLimit),
    refill: doc.refill ?? null,
    refilledFor: doc.refilledFor ?? null,
    rateLimitPerMinute: doc.rateLimitPerMinute ?? null,
    permissions: doc.permissions ? (doc.permissions as KeyPermission[]) : null,
    rolledFrom: doc.rolledFrom ? doc.rolledFrom.toHexString() : null,
    expiringNotifiedAt: doc.expiringNotifiedAt ?? null,
  };
}

function sameTime(a: Date | null, b: Date | null): boolean {
  return (a?.getTime() ?? null) === (b?.getTime() ?? null);
}

function omit(record: Record<string, unknown>, field: string): Record<string, unknown> {
  const { [field]: _omitted, ...rest } = record;
  return rest;
}
