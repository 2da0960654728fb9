import type { Collection, Document } from 'mongodb';
import type { Connection } from 'mongoose';
import { creditsLeftNow, periodOfRefill } from '../domain/keys/settings.js';
import { MOVE_IN_FLIGHT_MS, type KeyCreditStore, type MoveOutcome, type PendingReservation, type RefillPeriods, type ReserveOutcome } from '../domain/keys/credit-limit.js';
import { nativeCollection, toObjectId } from './accounts.js';
import { CoalescedPulls } from './coalesced-pulls.js';
import { apiKeyCollectionName, type ApiKeyDoc } from './models/api-key.js';

/** Refund op ids a key remembers (retries of a refund come soon after it). */
const REFUND_OPS_KEPT = 100;

/**
 * Keys' credit limits on the `api_keys` documents: every change is one guarded update (update
 * pipelines where a due refill and the change must be one atomic step). None of them moves `updatedAt`:
 * a charge is not a change of settings, and key caches keep the key.
 */
export class MongoKeyCreditStore implements KeyCreditStore {
  private readonly collection: Collection<ApiKeyDoc>;
  /** Confirmations are written a window's worth at a time: nobody waits on them in a request. */
  private readonly confirmations: CoalescedPulls<ApiKeyDoc>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<ApiKeyDoc>(connection, apiKeyCollectionName);
    this.confirmations = new CoalescedPulls(this.collection, (ops) => ({ pending: { op: { $in: ops } } }));
  }

  async reserve(keyId: string, op: string, amount: number, periods: RefillPeriods, at: Date): Promise<ReserveOutcome> {
    const _id = toObjectId(keyId);
    if (!_id) return { kind: 'uncapped' };
    const { period, available } = leftNow(periods);
    const reserved = await this.collection.findOneAndUpdate(
      { _id, deletedAt: null, creditLimit: { $gt: 0 }, 'pending.op': { $ne: op }, $expr: { $gte: [available, amount] } },
      [
        {
          $set: {
            creditsLeft: { $subtract: [available, amount] },
            refilledFor: period,
            pending: { $concatArrays: [{ $ifNull: ['$pending', []] }, [{ op: { $literal: op }, amount: { $literal: amount }, at: { $literal: at }, period }]] },
          },
        },
      ] as Document[],
      // The period this reservation took from is the one the update just stored (the pending array,
      // which holds every reservation not yet confirmed, stays on the server).
      { returnDocument: 'after', projection: { refilledFor: 1 } },
    );
    if (reserved) return { kind: 'reserved', period: reserved.refilledFor ?? null };
    const key = await this.collection.findOne({ _id }, { projection: { creditLimit: 1, deletedAt: 1, pending: 1 } });
    if (!key || key.deletedAt || !(typeof key.creditLimit === 'number' && key.creditLimit > 0)) return { kind: 'uncapped' };
    const already = key.pending?.find((p) => p.op === op);
    return already ? { kind: 'reserved', period: already.period ?? null } : { kind: 'limit' };
  }

  async reserveAll(keyId: string, op: string, periods: RefillPeriods, at: Date): Promise<MoveOutcome> {
    const _id = toObjectId(keyId);
    if (!_id) return { kind: 'uncapped' };
    const { period, available } = leftNow(periods);
    // The state before the update tells what it took (the pending array stays on the server).
    const before = await this.collection.findOneAndUpdate(
      { _id, deletedAt: null, creditLimit: { $gt: 0 }, 'pending.op': { $ne: op }, $expr: { $gte: [available, 1] } },
      [{ $set: { creditsLeft: 0, refilledFor: period, pending: { $concatArrays: [{ $ifNull: ['$pending', []] }, [{ op: { $literal: op }, amount: available, at: { $literal: at }, period }]] } } }] as Document[],
      { returnDocument: 'before', projection: { creditLimit: 1, creditsLeft: 1, refill: 1, refilledFor: 1 } },
    );
    if (before) {
      const key = { creditLimit: before.creditLimit ?? null, creditsLeft: before.creditsLeft ?? null, refill: before.refill ?? null, refilledFor: before.refilledFor ?? null };
      return { kind: 'reserved', period: periodOfRefill(key.refill, at), amount: creditsLeftNow(key, at)!, limit: key.creditLimit! };
    }
    const key = await this.collection.findOne({ _id }, { projection: { creditLimit: 1, deletedAt: 1, refill: 1, pending: 1 } });
    if (!key || key.deletedAt || !(typeof key.creditLimit === 'number' && key.creditLimit > 0)) return { kind: 'uncapped' };
    const moving = (key.pending ?? []).some((p) => p.at.getTime() > at.getTime() - MOVE_IN_FLIGHT_MS);
    return { kind: 'limit', period: periodOfRefill(key.refill ?? null, at), moving };
  }

  async confirm(keyId: string, op: string): Promise<void> {
    const _id = toObjectId(keyId);
    if (_id) await this.confirmations.pull(_id, op);
  }

  async release(keyId: string, reservation: { op: string; amount: number; period: string | null }): Promise<void> {
    const _id = toObjectId(keyId);
    if (!_id) return;
    // Back to the period they came from only: a refill since then has already restored the key.
    const samePeriod = { $eq: [{ $ifNull: ['$refilledFor', null] }, reservation.period] };
    await this.collection.updateOne({ _id, 'pending.op': reservation.op }, [
      {
        $set: {
          creditsLeft: {
            $cond: [{ $and: [samePeriod, { $gt: ['$creditLimit', 0] }] }, { $min: ['$creditLimit', { $add: [{ $ifNull: ['$creditsLeft', 0] }, reservation.amount] }] }, '$creditsLeft'],
          },
          pending: { $filter: { input: '$pending', cond: { $ne: ['$$this.op', reservation.op] } } },
        },
      },
    ] as Document[]);
  }

  async refund(keyId: string, op: string | null, amount: number): Promise<void> {
    const _id = toObjectId(keyId);
    if (!_id) return;
    const left = { $min: ['$creditLimit', { $add: [{ $ifNull: ['$creditsLeft', '$creditLimit'] }, amount] }] };
    if (op === null) {
      await this.collection.updateOne({ _id, creditLimit: { $gt: 0 } }, [{ $set: { creditsLeft: left } }] as Document[]);
      return;
    }
    await this.collection.updateOne({ _id, creditLimit: { $gt: 0 }, refundOps: { $ne: op } }, [
      { $set: { creditsLeft: left, refundOps: { $slice: [{ $concatArrays: [{ $ifNull: ['$refundOps', []] }, [{ $literal: op }]] }, -REFUND_OPS_KEPT] } } },
    ] as Document[]);
  }

  async stale(before: Date, limit: number): Promise<PendingReservation[]> {
    const docs = await this.collection
      .find({ 'pending.at': { $lt: before } }, { projection: { accountId: 1, pending: 1 } })
      .limit(limit)
      .toArray();
    return docs
      .flatMap((doc) =>
        (doc.pending ?? [])
          .filter((p) => p.at < before)
          .map((p) => ({ keyId: doc._id.toHexString(), accountId: doc.accountId.toHexString(), op: p.op, amount: p.amount, period: p.period ?? null, at: p.at })),
      )
      .sort((x, y) => x.at.getTime() - y.at.getTime());
  }
}

/**
 * As update-pipeline expressions: the period a key's credits belong to now, and what it has left in it
 * (all of its limit when the stored figure is from an earlier period: the refill is this reset,
 * computed at the charge).
 */
function leftNow(periods: RefillPeriods): { period: Document; available: Document } {
  const period = { $switch: { branches: [{ case: { $eq: ['$refill', 'daily'] }, then: periods.daily }, { case: { $eq: ['$refill', 'monthly'] }, then: periods.monthly }], default: null } };
  const stale = { $ne: [{ $ifNull: ['$refilledFor', null] }, period] };
  return { period, available: { $cond: [stale, '$creditLimit', { $ifNull: ['$creditsLeft', '$creditLimit'] }] } };
}
