import { Schema, Types, type Connection, type Model } from 'mongoose';
import type { Collection } from 'mongodb';
import type { SignupClaim, SignupClaimStore } from '../domain/identity/ports.js';
import { ignoreExists, nativeCollection } from './accounts.js';

const DUPLICATE_KEY = 11000;

/** One sign-up in progress (collection `signup_claims`), keyed by the address. */
interface SignupClaimDoc {
  /** The normalized address: the unique key that makes one claim per address. */
  _id: string;
  accountId: string;
  accountName: string;
  passwordHash: string;
  linkId: string;
  createdAt: Date;
  /** The TTL index removes a claim a crash left behind. */
  expiresAt: Date;
}

const schema = new Schema<SignupClaimDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    accountName: { type: String, required: true },
    passwordHash: { type: String, required: true },
    linkId: { type: String, required: true },
    createdAt: { type: Date, required: true },
    expiresAt: { type: Date, required: true },
  },
  { collection: 'signup_claims', versionKey: false },
);
schema.index({ expiresAt: 1 }, { expireAfterSeconds: 0 });

export class MongoSignupClaimStore implements SignupClaimStore {
  private readonly model: Model<SignupClaimDoc>;
  private readonly collection: Collection<SignupClaimDoc>;

  constructor(connection: Connection) {
    this.model = (connection.models.SignupClaim as Model<SignupClaimDoc> | undefined) ?? connection.model<SignupClaimDoc>('SignupClaim', schema);
    this.collection = nativeCollection<SignupClaimDoc>(connection, 'signup_claims');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async claim(claim: Omit<SignupClaim, 'accountId' | 'createdAt'>, now: Date, expiresAt: Date): Promise<SignupClaim> {
    const doc: SignupClaimDoc = {
      _id: claim.email,
      accountId: new Types.ObjectId().toHexString(),
      accountName: claim.accountName,
      passwordHash: claim.passwordHash,
      linkId: claim.linkId,
      createdAt: now,
      expiresAt,
    };
    // Expired but not yet removed by the TTL monitor: it no longer holds the address.
    await this.collection.deleteOne({ _id: claim.email, expiresAt: { $lte: now } });
    for (;;) {
      try {
        await this.collection.insertOne(doc);
        return toClaim(doc);
      } catch (err) {
        if ((err as { code?: number }).code !== DUPLICATE_KEY) throw err;
      }
      const existing = await this.collection.findOne({ _id: claim.email });
      // Released between the insert and the read: claim again.
      if (existing) return toClaim(existing);
    }
  }

  async release(email: string, accountId: string): Promise<void> {
    await this.collection.deleteOne({ _id: email, accountId });
  }
}

function toClaim(d: SignupClaimDoc): SignupClaim {
  return { email: d._id, accountId: d.accountId, accountName: d.accountName, passwordHash: d.passwordHash, linkId: d.linkId, createdAt: d.createdAt };
}
