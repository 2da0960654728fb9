import type { Connection, Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { DefinitionCacheStore } from '../domain/definitions/cache.js';
import { definitionCacheModel, type DefinitionCacheDoc } from './models/definition-cache.js';
import { ignoreExists, nativeCollection } from './accounts.js';

/** Shared definition cache (collection `definition_cache`; the TTL monitor removes expired entries). */
export class MongoDefinitionCacheStore implements DefinitionCacheStore {
  private readonly model: Model<DefinitionCacheDoc>;
  private readonly collection: Collection<DefinitionCacheDoc>;

  constructor(connection: Connection) {
    this.model = definitionCacheModel(connection);
    this.collection = nativeCollection<DefinitionCacheDoc>(connection, this.model.collection.collectionName);
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async get(provider: string, keyword: string, now: Date): Promise<string | null> {
    // The TTL monitor runs about once a minute: an entry past its time may still be there.
    const doc = await this.collection.findOne({ _id: id(provider, keyword), expiresAt: { $gt: now } }, { projection: { definition: 1 } });
    return doc?.definition ?? null;
  }

  async set(provider: string, keyword: string, definition: string, expiresAt: Date): Promise<void> {
    await this.collection.updateOne(
      { _id: id(provider, keyword) },
      { $set: { provider, keyword, definition, createdAt: new Date(), expiresAt } },
      { upsert: true },
    );
  }
}

function id(provider: string, keyword: string): string {
  return `${provider}\u0000${keyword}`;
}
