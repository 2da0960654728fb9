import type { Connection, Model, Types } from 'mongoose';
import type { AnyBulkWriteOperation, Collection } from 'mongodb';
import type { UsageRow, UsageStore } from '../domain/usage/types.js';
import { ignoreExists, nativeCollection, toObjectId } from './accounts.js';
import type { AccountDoc } from './models/account.js';
import { parseUsageBucket, usageModel, type UsageCounters, type UsageDoc } from './models/usage.js';

type AccountUsage = Pick<AccountDoc, '_id' | 'usage' | 'usageOldestDay'>;

/**
 * Usage on MongoDB. Counting happens in MongoAccountStore.apply (the balance update itself); this store
 * moves finished days from the account document to the `usage` collection and reads both.
 *
 * A roll-up without transactions, bucket by bucket: 1) upsert the row with the bucket's values as read
 * (`$max`, so a late roll-up holding older values can never lower a row), 2) unset the bucket on the
 * account only while its values are still those. A crash between the two leaves the bucket in both
 * places with the account's values equal or larger, so a reader takes the account's bucket where there
 * is one and the row otherwise (never the sum); the next roll-up finishes the move.
 */
export class MongoUsageStore implements UsageStore {
  private readonly model: Model<UsageDoc>;
  private readonly rows: Collection<UsageDoc>;
  private readonly accounts: Collection<AccountDoc>;

  constructor(connection: Connection) {
    this.model = usageModel(connection);
    this.rows = nativeCollection<UsageDoc>(connection, this.model.collection.collectionName);
    // The accounts collection by name: its indexes (usageOldestDay included) are MongoAccountStore's.
    this.accounts = nativeCollection<AccountDoc>(connection, 'accounts');
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async rollUp(accountId: string, before: Date): Promise<void> {
    const _id = toObjectId(accountId);
    const doc = _id && (await this.accounts.findOne({ _id }, { projection: { usage: 1, usageOldestDay: 1 } }));
    if (doc) await this.moveOld(doc, before);
  }

  async rollUpStale(before: Date, limit: number): Promise<number> {
    const docs = await this.accounts.find({ usageOldestDay: { $lt: before } }, { projection: { usage: 1, usageOldestDay: 1 } }).limit(limit).toArray();
    for (const doc of docs) await this.moveOld(doc, before);
    return docs.length;
  }

  async read(accountId: string, from: Date, to: Date): Promise<UsageRow[] | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    // The account first, then the rows: a bucket that moves in between is in the rows by then (a
    // roll-up writes the row before it unsets the bucket), so no bucket is missed.
    const doc = await this.accounts.findOne({ _id }, { projection: { usage: 1 } });
    if (!doc) return null;
    const rows = await this.rows.find({ accountId: _id.toHexString(), day: { $gte: from, $lte: to } }).toArray();
    const byBucket = new Map<string, UsageRow>();
    for (const r of rows) {
      byBucket.set(key(r.day, r.service, r.source), { day: r.day, service: r.service, source: r.source, calls: r.calls, credits: r.credits, refunded: r.refunded });
    }
    for (const [bucket, counters] of Object.entries(doc.usage ?? {})) {
      const b = parseUsageBucket(bucket);
      if (!b || b.day < from || b.day > to) continue;
      // Where a bucket is in both places (a roll-up interrupted), the account's values are the newer.
      byBucket.set(key(b.day, b.service, b.source), { ...b, ...counts(counters) });
    }
    return [...byBucket.values()];
  }

  /** Moves the buckets of days before `before`, then brings usageOldestDay up to date. */
  private async moveOld(doc: AccountUsage, before: Date): Promise<void> {
    const accountId = doc._id.toHexString();
    const old = Object.entries(doc.usage ?? {}).flatMap(([bucket, counters]) => {
      const b = parseUsageBucket(bucket);
      return b && b.day < before ? [{ bucket, ...b, counters: counts(counters) }] : [];
    });
    if (old.length === 0 && !(doc.usageOldestDay && doc.usageOldestDay < before)) return;
    if (old.length > 0) {
      await this.rows.bulkWrite(
        old.map(
          (o): AnyBulkWriteOperation<UsageDoc> => ({
            updateOne: {
              filter: { _id: `${accountId}:${o.bucket}` },
              update: { $max: o.counters, $setOnInsert: { accountId, day: o.day, service: o.service, source: o.source } },
              upsert: true,
            },
          }),
        ),
        { ordered: false },
      );
      await this.accounts.bulkWrite(
        old.map(
          (o): AnyBulkWriteOperation<AccountDoc> => ({
            // Only while unchanged: a bucket counted into meanwhile (clock skew) stays for the next roll-up.
            updateOne: { filter: { _id: doc._id, ...unchanged(o.bucket, doc.usage![o.bucket]!) }, update: { $unset: { [`usage.${o.bucket}`]: '' } } },
          }),
        ),
        { ordered: false },
      );
    }
    await this.resetOldest(doc._id, before);
  }

  /**
   * usageOldestDay must stay at or before the oldest bucket's day, whatever charges run meanwhile: they
   * only add buckets of today or yesterday (never before `before`) and lower it with `$min`.
   */
  private async resetOldest(_id: Types.ObjectId, before: Date): Promise<void> {
    const after = await this.accounts.findOne({ _id }, { projection: { usage: 1 } });
    if (!after) return;
    const days = Object.keys(after.usage ?? {}).flatMap((bucket) => parseUsageBucket(bucket)?.day ?? []);
    if (days.length === 0) {
      // Nothing left: drop the marker, unless a charge has just added a bucket.
      const res = await this.accounts.updateOne({ _id, $or: [{ usage: { $exists: false } }, { usage: {} }] }, { $unset: { usage: '', usageOldestDay: '' } });
      if (res.matchedCount === 1) return;
    }
    const oldest = days.reduce((min, d) => (d < min ? d : min), before);
    await this.accounts.updateOne({ _id }, { $set: { usageOldestDay: oldest } });
  }
}

function counts(c: UsageCounters): Required<UsageCounters> {
  return { calls: c.calls ?? 0, credits: c.credits ?? 0, refunded: c.refunded ?? 0 };
}

/** Filter part: the bucket's counters are exactly `c` (a counter never counted is still absent). */
function unchanged(bucket: string, c: UsageCounters): Record<string, unknown> {
  const guard = (v: number | undefined) => (v === undefined ? { $exists: false } : v);
  return { [`usage.${bucket}.calls`]: guard(c.calls), [`usage.${bucket}.credits`]: guard(c.credits), [`usage.${bucket}.refunded`]: guard(c.refunded) };
}

function key(day: Date, service: string, source: string): string {
  return `${day.getTime()}|${service}|${source}`;
}
