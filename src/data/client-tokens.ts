import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { ClientTokenRecord, ClientTokenStore } from '../domain/client-tokens/records.js';
import type { ClientScope } from '../domain/client-tokens/scopes.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';
import { GroupCommit, togetherOrEach } from './group-commit.js';

/** A charge's share of a client token's budget (reserve). */
interface TokenReservation {
  _id: Types.ObjectId;
  credits: number;
  maxCredits: number;
}

/** Stored shape (collection `client_tokens`); a TTL index removes a token a day after it expired. */
interface ClientTokenDoc {
  _id: Types.ObjectId;
  accountId: Types.ObjectId;
  keyId: Types.ObjectId | null;
  userId: Types.ObjectId | null;
  hash: string;
  origins: string[];
  scopes: ClientScope[];
  maxCredits: number | null;
  /** Absent on tokens from before trusted documents: false. */
  trustedDocumentsOnly?: boolean;
  /** Absent on tokens of a key and older console tokens. */
  sessionId?: string | null;
  /** Credits reserved by requests so far (see ClientTokenStore.reserve). */
  spent: number;
  createdAt: Date;
  expiresAt: Date;
}

const schema = new Schema<ClientTokenDoc>(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    keyId: { type: Schema.Types.ObjectId, default: null },
    userId: { type: Schema.Types.ObjectId, default: null },
    hash: { type: String, required: true },
    origins: { type: [String], required: true },
    scopes: { type: [String], required: true },
    maxCredits: { type: Number, default: null },
    trustedDocumentsOnly: { type: Boolean },
    sessionId: { type: String, default: null },
    spent: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'client_tokens', versionKey: false },
);
schema.index({ hash: 1 }, { unique: true });
// Kept a day past expiry, so "expired" can still be told apart from "unknown".
schema.index({ expiresAt: 1 }, { expireAfterSeconds: 24 * 3600 });

export class MongoClientTokenStore implements ClientTokenStore {
  private readonly model: Model<ClientTokenDoc>;
  private readonly collection: Collection<ClientTokenDoc>;
  /** Budget reservations of one token, written together while one is in flight. */
  private readonly reservations = new GroupCommit<TokenReservation, boolean>(
    (r) => this.reserveTogether([r]),
    // All or none; else one at a time, in the order they came.
    (rs) => togetherOrEach(rs, async (all) => ((await this.reserveTogether(all)) ? all.map(() => true) : null), (r) => this.reserveTogether([r])),
  );

  constructor(connection: Connection) {
    this.model = (connection.models.ClientToken as Model<ClientTokenDoc> | undefined) ?? connection.model<ClientTokenDoc>('ClientToken', schema);
    this.collection = nativeCollection<ClientTokenDoc>(connection, 'client_tokens');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async insert(token: Omit<ClientTokenRecord, 'id'>): Promise<ClientTokenRecord> {
    const accountId = toObjectId(token.accountId);
    const keyId = token.keyId === null ? null : toObjectId(token.keyId);
    const userId = token.userId === null ? null : toObjectId(token.userId);
    // Exactly one of key and user: a token acts for the key that minted it, or for a console user.
    if (!accountId || (keyId === null) === (userId === null)) throw new Error('client token: an account id and either a key id or a user id (ObjectIds)');
    const doc: ClientTokenDoc = { _id: new Types.ObjectId(), ...token, accountId, keyId, userId, origins: [...token.origins], scopes: [...token.scopes], spent: 0 };
    await this.collection.insertOne(doc);
    return toRecord(doc);
  }

  async findByHash(hash: string): Promise<ClientTokenRecord | null> {
    const doc = await this.collection.findOne({ hash }, { projection: { spent: 0 } });
    return doc ? toRecord(doc) : null;
  }

  reserve(tokenId: string, credits: number, maxCredits: number): Promise<boolean> {
    const _id = toObjectId(tokenId);
    if (!_id) return Promise.resolve(false);
    // Concurrent ones of one token go together while one is in flight (GroupCommit), under one budget.
    return this.reservations.submit(`${tokenId}|${maxCredits}`, { _id, credits, maxCredits });
  }

  /** One guarded update: reservations taken together cannot pass the budget, all or none. */
  private async reserveTogether(rs: TokenReservation[]): Promise<boolean> {
    const total = rs.reduce((sum, r) => sum + r.credits, 0);
    const result = await this.collection.updateOne({ _id: rs[0]!._id, spent: { $lte: rs[0]!.maxCredits - total } }, { $inc: { spent: total } });
    return result.modifiedCount === 1;
  }

  async release(tokenId: string, credits: number): Promise<void> {
    const _id = toObjectId(tokenId);
    if (_id) await this.collection.updateOne({ _id }, { $inc: { spent: -credits } });
  }
}

function toRecord(doc: Omit<ClientTokenDoc, 'spent'>): ClientTokenRecord {
  return {
    id: doc._id.toHexString(),
    accountId: doc.accountId.toHexString(),
    keyId: doc.keyId?.toHexString() ?? null,
    userId: doc.userId?.toHexString() ?? null,
    hash: doc.hash,
    origins: doc.origins,
    scopes: doc.scopes,
    maxCredits: doc.maxCredits ?? null,
    trustedDocumentsOnly: doc.trustedDocumentsOnly === true,
    sessionId: doc.sessionId ?? null,
    createdAt: doc.createdAt,
    expiresAt: doc.expiresAt,
  };
}
