import type { Collection } from 'mongodb';
import type { Connection } from 'mongoose';
import type { LowCreditsEvent, LowCreditsState, LowCreditsStore } from '../domain/webhooks/ports.js';
import { DEFAULT_LOW_CREDITS_THRESHOLD } from '../domain/webhooks/types.js';
import { nativeCollection, toObjectId } from './accounts.js';
import { lowCreditsStateOf, type AccountDoc } from './models/account.js';

/**
 * The `credits.low` state on the account document (`lowCreditsThreshold`, `lowCreditsDisarmed`,
 * `lowCreditsEvent`): absent fields mean the default threshold, armed, nothing to publish.
 */
export class MongoLowCreditsStore implements LowCreditsStore {
  private readonly collection: Collection<AccountDoc>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<AccountDoc>(connection, 'accounts');
  }

  async init(): Promise<void> {
    await this.collection.createIndex({ 'lowCreditsEvent.at': 1 }, { sparse: true });
  }

  async state(accountId: string): Promise<LowCreditsState | null> {
    const _id = toObjectId(accountId);
    const doc = _id && (await this.collection.findOne({ _id }, { projection: { lowCreditsThreshold: 1, lowCreditsDisarmed: 1 } }));
    return doc ? lowCreditsStateOf(doc) : null;
  }

  async fire(accountId: string, balance: number, event: LowCreditsEvent): Promise<boolean> {
    const _id = toObjectId(accountId);
    if (!_id) return false;
    const res = await this.collection.updateOne(
      { _id, lowCreditsDisarmed: { $ne: true }, lowCreditsEvent: null, credits: { $lte: balance }, ...threshold('$gt', balance) },
      { $set: { lowCreditsDisarmed: true, lowCreditsEvent: event } },
    );
    return res.modifiedCount === 1;
  }

  async rearm(accountId: string, balance: number): Promise<boolean> {
    const _id = toObjectId(accountId);
    if (!_id) return false;
    const res = await this.collection.updateOne({ _id, lowCreditsDisarmed: true, credits: { $gte: balance }, ...threshold('$lte', balance) }, { $set: { lowCreditsDisarmed: false } });
    return res.modifiedCount === 1;
  }

  async setThreshold(accountId: string, value: number): Promise<LowCreditsState | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    const res = await this.collection.updateOne({ _id }, { $set: { lowCreditsThreshold: value } });
    if (res.matchedCount === 0) return null;
    // Each guarded on the balance at its own moment: a balance change in between observes for itself.
    await this.collection.updateOne({ _id, lowCreditsThreshold: value, credits: { $lt: value } }, { $set: { lowCreditsDisarmed: true } });
    await this.collection.updateOne({ _id, lowCreditsThreshold: value, credits: { $gte: value } }, { $set: { lowCreditsDisarmed: false } });
    return this.state(accountId);
  }

  async overdue(before: Date, limit: number): Promise<{ accountId: string; event: LowCreditsEvent }[]> {
    const docs = await this.collection
      .find({ 'lowCreditsEvent.at': { $lte: before } }, { projection: { lowCreditsEvent: 1 } })
      .limit(limit)
      .toArray();
    return docs.filter((d) => d.lowCreditsEvent).map((d) => ({ accountId: d._id.toHexString(), event: d.lowCreditsEvent! }));
  }

  async markPublished(accountId: string, eventId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.collection.updateOne({ _id, 'lowCreditsEvent.eventId': eventId }, { $unset: { lowCreditsEvent: '' } });
  }
}

/** Filter part: the account's threshold (the default where unset) compares to `balance` by `op`. */
function threshold(op: '$gt' | '$lte', balance: number): Record<string, unknown> {
  const defaultMatches = op === '$gt' ? DEFAULT_LOW_CREDITS_THRESHOLD > balance : DEFAULT_LOW_CREDITS_THRESHOLD <= balance;
  return defaultMatches ? { $or: [{ lowCreditsThreshold: { [op]: balance } }, { lowCreditsThreshold: { $exists: false } }] } : { lowCreditsThreshold: { [op]: balance } };
}
