import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import type { TrustedDocumentRecord, TrustedDocumentStore, TrustedDocumentSummary } from '../domain/trusted-documents/service.js';
import { nativeCollection } from './accounts.js';

/** Stored shape (collection `graphql_documents`): one per account and document hash. */
type TrustedDocumentDoc = Omit<TrustedDocumentRecord, 'id'> & { _id: string; hash: string };

const keyOf = (accountId: string, id: string) => `${accountId}:${id}`;

export class MongoTrustedDocumentStore implements TrustedDocumentStore {
  private readonly collection: Collection<TrustedDocumentDoc>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<TrustedDocumentDoc>(connection, 'graphql_documents');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ accountId: 1, createdAt: 1 });
  }

  async insertNew(documents: readonly TrustedDocumentRecord[]): Promise<number> {
    // Upserts that only ever insert: a document registered meanwhile (another request) stays as it was.
    const result = await this.collection.bulkWrite(
      documents.map(({ id, ...rest }) => ({
        updateOne: { filter: { _id: keyOf(rest.accountId, id) }, update: { $setOnInsert: { ...rest, hash: id } }, upsert: true },
      })),
      { ordered: false },
    );
    return result.upsertedCount;
  }

  async registered(accountId: string, ids: readonly string[]): Promise<Set<string>> {
    const docs = await this.collection.find({ _id: { $in: ids.map((id) => keyOf(accountId, id)) } }, { projection: { hash: 1 } }).toArray();
    return new Set(docs.map((d) => d.hash));
  }

  count(accountId: string): Promise<number> {
    return this.collection.countDocuments({ accountId });
  }

  async list(accountId: string): Promise<TrustedDocumentSummary[]> {
    const docs = await this.collection.find({ accountId }, { projection: { body: 0 } }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map((d) => ({ id: d.hash, name: d.name, type: d.type, createdAt: d.createdAt }));
  }

  async body(accountId: string, id: string): Promise<string | null> {
    const doc = await this.collection.findOne({ _id: keyOf(accountId, id) }, { projection: { body: 1 } });
    return doc?.body ?? null;
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    return (await this.collection.deleteOne({ _id: keyOf(accountId, id) })).deletedCount === 1;
  }
}
