import type { Collection, Document, ObjectId } from 'mongodb';
import type { Connection } from 'mongoose';
import type { KeyCreditStore, PendingReservation, RefillPeriods, ReserveOutcome } from '../domain/keys/credit-limit.js';
import { nativeCollection, toObjectId } from './accounts.js';
import { CoalescedPulls } from './coalesced-pulls.js';
import { GroupCommit, togetherOrEach, type Settled } from './group-commit.js';
import type { KeyRefill } from '../domain/keys/records.js';
import { apiKeyCollectionName, type ApiKeyDoc } from './models/api-key.js';

/** A charge's reservation in the usual case (see reserve). */
interface UsualReservation {
  _id: ObjectId;
  op: string;
  amount: number;
  at: Date;
  refill: KeyRefill | null;
  period: string | null;
}

/** Refund op ids a key remembers (retries of a refund come soon after it). */
const REFUND_OPS_KEPT = 100;

/**
 * Keys' credit limits on the `api_keys` documents: every change is one guarded update (an operator
 * update for the usual reservation; update pipelines where a due refill and the change must be one
 * atomic step). None of them moves `updatedAt`:
 * a charge is not a change of settings, and key caches keep the key.
 */
export class MongoKeyCreditStore implements KeyCreditStore {
  private readonly collection: Collection<ApiKeyDoc>;
  /** Confirmations are written a window's worth at a time: nobody waits on them in a request. */
  private readonly confirmations: CoalescedPulls<ApiKeyDoc>;
  /** Usual reservations (see reserve) of one key, written together while one is in flight. */
  private readonly usual: GroupCommit<UsualReservation, boolean>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<ApiKeyDoc>(connection, apiKeyCollectionName);
    this.usual = new GroupCommit(
      (r) => this.reserveUsual([r]),
      (rs) => this.reserveUsualTogether(rs),
    );
    this.confirmations = new CoalescedPulls(this.collection, (ops) => ({ pending: { op: { $in: ops } } }));
  }

  async reserve(keyId: string, op: string, amount: number, periods: RefillPeriods, at: Date, refill?: KeyRefill | null): Promise<ReserveOutcome> {
    const _id = toObjectId(keyId);
    if (!_id) return { kind: 'uncapped' };
    // The usual charge, when the caller knows the key's refill (its cached key): credits left belong
    // to the period that refill names now and cover the amount. Then the reservation is a plain
    // operator update, as cheap as the account's charge (an update pipeline costs the embedded server
    // several times as much). A stale refill setting, a due refill, a key stored before creditsLeft
    // or too little left matches nothing and falls through to the pipeline, which decides them all.
    if (refill !== undefined) {
      const period = refill === 'daily' ? periods.daily : refill === 'monthly' ? periods.monthly : null;
      // Concurrent ones of one key go together, as the account's charges do (GroupCommit).
      if (await this.usual.submit(`${keyId}|${period}`, { _id, op, amount, at, refill, period })) return { kind: 'reserved', period };
    }
    // The period the key's credits belong to now, and what it has left in it (all of its limit when
    // the stored figure is from an earlier period: the refill is this reset, computed at the charge).
    const period = { $switch: { branches: [{ case: { $eq: ['$refill', 'daily'] }, then: periods.daily }, { case: { $eq: ['$refill', 'monthly'] }, then: periods.monthly }], default: null } };
    const stale = { $ne: [{ $ifNull: ['$refilledFor', null] }, period] };
    const available = { $cond: [stale, '$creditLimit', { $ifNull: ['$creditsLeft', '$creditLimit'] }] };
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

  /**
   * The usual reservations of some charges of one key (credits left of the period `refill` names
   * now): one operator update taking their sum, all or none. True when taken.
   */
  private async reserveUsual(rs: UsualReservation[]): Promise<boolean> {
    const { _id, refill, period } = rs[0]!;
    const total = rs.reduce((sum, r) => sum + r.amount, 0);
    const res = await this.collection.updateOne(
      { _id, deletedAt: null, creditLimit: { $gt: 0 }, refill: refill ?? { $nin: ['daily', 'monthly'] }, refilledFor: period, creditsLeft: { $gte: total }, 'pending.op': { $nin: rs.map((r) => r.op) } },
      { $inc: { creditsLeft: -total }, $push: { pending: { $each: rs.map((r) => ({ op: r.op, amount: r.amount, at: r.at, period })) } } },
    );
    return res.modifiedCount === 1;
  }

  /** Together when all fit; else one at a time in the order they came (those left go to the pipeline). */
  private reserveUsualTogether(rs: UsualReservation[]): Promise<Settled<boolean>[]> {
    // The same op twice must be reserved once: one at a time tells which.
    const distinct = new Set(rs.map((r) => r.op)).size === rs.length;
    return togetherOrEach(rs, async (all) => (distinct && (await this.reserveUsual(all)) ? all.map(() => true) : null), (r) => this.reserveUsual([r]));
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

