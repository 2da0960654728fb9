import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import { nativeCollection } from './accounts.js';
import type { SeedClaim, SeedClaimStore } from '../domain/demo/ports.js';

const CLAIM_ID = 'demo-seed';
const DUPLICATE_KEY = 11000;

interface ClaimDoc {
  _id: string;
  state: 'seeding' | 'done';
  claimedAt: Date;
  holder: string;
  accountId?: string | null;
  doneAt?: Date;
}

/** The demo seed's claim: one document with a fixed _id in `settings`, so the insert is the race. */
export class MongoSeedClaimStore implements SeedClaimStore {
  constructor(private readonly connection: Connection) {}

  private get collection(): Collection<ClaimDoc> {
    return nativeCollection<ClaimDoc>(this.connection, 'settings');
  }

  async get(): Promise<SeedClaim | null> {
    const doc = await this.collection.findOne({ _id: CLAIM_ID });
    return doc ? { state: doc.state, claimedAt: doc.claimedAt, holder: doc.holder, accountId: doc.accountId ?? null } : null;
  }

  async claim(holder: string, at: Date): Promise<boolean> {
    try {
      await this.collection.insertOne({ _id: CLAIM_ID, state: 'seeding', claimedAt: at, holder, accountId: null });
      return true;
    } catch (err) {
      if ((err as { code?: number }).code === DUPLICATE_KEY) return false;
      throw err;
    }
  }

  async takeOver(claimedAt: Date, holder: string, at: Date): Promise<boolean> {
    const res = await this.collection.updateOne({ _id: CLAIM_ID, state: 'seeding', claimedAt }, { $set: { claimedAt: at, holder } });
    return res.modifiedCount === 1;
  }

  async recordAccount(holder: string, accountId: string): Promise<void> {
    await this.collection.updateOne({ _id: CLAIM_ID, holder }, { $set: { accountId } });
  }

  async finish(holder: string, at: Date): Promise<void> {
    await this.collection.updateOne({ _id: CLAIM_ID, holder }, { $set: { state: 'done', doneAt: at } });
  }
}
