import { Types, type Connection, type Model } from 'mongoose';
import type { Collection, Document } from 'mongodb';
import type { AccountRecord, AccountStore, ApplyOptions, ApplyResult, HeldCredits, KeyCreditsOnAccount, RechargeState } from '../domain/credits/records.js';
import { utcDay, type UsageCount } from '../domain/usage/types.js';
import { OPS_KEPT, accountModel, lowCreditsStateOf, type AccountDoc } from './models/account.js';
import { usageCounterPaths } from './models/usage.js';
import { Kept } from '../domain/kept.js';
import { CoalescedPulls } from './coalesced-pulls.js';
import { GroupCommit, togetherOrEach, type Settled } from './group-commit.js';

const DUPLICATE_KEY = 11000;
/** A charge waiting for the account's write in flight (apply). */
interface Charge {
  accountId: string;
  delta: number;
  opId: string | null;
  usage?: UsageCount;
  held?: ApplyOptions['held'];
}
/** Refund op ids an account remembers for the key credits it holds (retries of a refund come soon after it). */
const KEY_REFUND_OPS_KEPT = 100;
/** What a balance change reads back: the balance and what decides the alerts and recharge it may start (the driver copies options). */
const APPLIED_STATE = Object.freeze({
  returnDocument: 'after',
  projection: Object.freeze({ credits: 1, lowCreditsThreshold: 1, lowCreditsDisarmed: 1, autoRecharge: 1, rechargeInFlight: 1 }),
} as const);

/**
 * Accounts and balances on MongoDB. Balance changes go straight to the driver (no mongoose document
 * layer): they are on every request's path, and each is exactly one guarded findOneAndUpdate.
 */
export class MongoAccountStore implements AccountStore, KeyCreditsOnAccount {
  private readonly model: Model<AccountDoc>;
  private readonly collection: Collection<AccountDoc>;
  /** One-shot op ids forgotten a window's worth at a time (settleSoon). */
  private readonly settlements: CoalescedPulls<AccountDoc>;
  /** Concurrent charges of one account, written together (apply). */
  private readonly charges: GroupCommit<Charge, ApplyResult>;

  constructor(connection: Connection) {
    this.model = accountModel(connection);
    this.collection = nativeCollection<AccountDoc>(connection, this.model.collection.collectionName);
    this.settlements = new CoalescedPulls(this.collection, (ops) => ({ ops: { $in: ops } }));
    this.charges = new GroupCommit(
      (c) => this.applyNow(c.accountId, c.delta, c.opId, c.usage, { held: c.held }),
      (cs) => this.chargeTogether(cs),
    );
  }

  async init(): Promise<void> {
    await this.model.createCollection().catch(ignoreExists);
    await this.model.createIndexes();
  }

  async create(name: string, credits: number, now: Date): Promise<AccountRecord> {
    const doc = await this.model.create({ name, credits, ops: [], createdAt: now, updatedAt: now });
    return toRecord(doc.toObject());
  }

  async createWithId(accountId: string, name: string, now: Date): Promise<{ account: AccountRecord; created: boolean } | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    const doc: AccountDoc = { _id, name, credits: 0, ops: [], createdAt: now, updatedAt: now };
    try {
      // The insert is the race: the _id's unique index lets exactly one writer create it.
      await this.collection.insertOne(doc);
      return { account: toRecord(doc), created: true };
    } catch (err) {
      if ((err as { code?: number }).code !== DUPLICATE_KEY) throw err;
    }
    const existing = await this.find(accountId);
    return existing ? { account: existing, created: false } : null;
  }

  async find(accountId: string): Promise<AccountRecord | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    const doc = await this.collection.findOne({ _id }, { projection: { ops: 0, ...WITHOUT_USAGE } });
    return doc ? toRecord(doc) : null;
  }

  async isEmpty(): Promise<boolean> {
    return (await this.collection.findOne({}, { projection: { _id: 1 } })) === null;
  }

  apply(accountId: string, delta: number, opId: string | null, usage?: UsageCount, opts: ApplyOptions = {}): Promise<ApplyResult> {
    // A charge of an account that has one in flight waits for it and goes with the others that came
    // meanwhile, as one write (group commit): one round trip per turn, not per charge, on a hot account.
    if (delta < 0 && !opts.mayGoNegative) return this.charges.submit(accountId, { accountId, delta, opId, usage, held: opts.held });
    return this.applyNow(accountId, delta, opId, usage, opts);
  }

  /**
   * Charges of one account that waited for the write before them, as one guarded update that applies
   * all of them or none: the balance covers their sum and none of their op ids is recorded. Each then
   * answers with its own balance after it, as if applied one at a time in the order they came. When the
   * update matches nothing (the balance does not cover them all, an op id was seen, the account is
   * gone), they are applied one at a time in that order, each as a charge alone: exactly the ones a
   * one-at-a-time order refuses are refused. After a failed write the rest are not tried: each gets the
   * failure, and none is charged that was not written.
   */
  private async chargeTogether(charges: Charge[]): Promise<Settled<ApplyResult>[]> {
    const ops = charges.flatMap((c) => (c.opId === null ? [] : [c.opId]));
    const _id = toObjectId(charges[0]!.accountId);
    // The same op twice (a retry racing itself) must apply once: one at a time tells which.
    const each = (c: Charge) => this.applyNow(c.accountId, c.delta, c.opId, c.usage, { held: c.held });
    // Each key's credits on the account that the charges draw on: one period per key, and their sum.
    const held = new Map<string, { period: string; total: number }>();
    let periodsAgree = true;
    for (const c of charges) {
      if (!c.held) continue;
      const h = held.get(c.held.keyId) ?? { period: c.held.period, total: 0 };
      if (h.period !== c.held.period) periodsAgree = false;
      h.total -= c.delta;
      held.set(c.held.keyId, h);
    }
    if (!_id || !periodsAgree || new Set(ops).size !== ops.length) return togetherOrEach(charges, async () => null, each);
    let total = 0;
    const inc: Record<string, number> = {};
    let oldest: Date | undefined;
    for (const c of charges) {
      total -= c.delta;
      if (!c.usage) continue;
      const day = utcDay(c.usage.at);
      const fields = usageCounterPaths(day, c.usage.service, c.usage.source);
      inc[fields.calls] = (inc[fields.calls] ?? 0) + 1;
      inc[fields.credits] = (inc[fields.credits] ?? 0) - c.delta;
      if (!oldest || day < oldest) oldest = day;
    }
    inc.credits = -total;
    const filter: Record<string, unknown> = { _id, credits: { $gte: total } };
    for (const [keyId, h] of held) takeHeld(filter, inc, keyId, h.period, h.total);
    const update: Record<string, unknown> = { $inc: inc, $set: { updatedAt: new Date() } };
    if (ops.length > 0) {
      filter.ops = { $nin: ops.flatMap((op) => [op, voidMarker(op)]) };
      update.$push = { ops: { $each: ops, $slice: -OPS_KEPT } };
    }
    if (oldest) update.$min = { usageOldestDay: oldest };
    return togetherOrEach(
      charges,
      async (all) => {
        const after = await this.collection.findOneAndUpdate(filter, update, APPLIED_STATE);
        if (!after) return null;
        const lowCredits = lowCreditsStateOf(after);
        const recharge = rechargeStateOf(after);
        let balance = after.credits + total;
        return all.map((c): ApplyResult => {
          balance += c.delta;
          return { kind: 'applied', balance, lowCredits, recharge };
        });
      },
      each,
    );
  }

  private async applyNow(accountId: string, delta: number, opId: string | null, usage?: UsageCount, opts: ApplyOptions = {}): Promise<ApplyResult> {
    const _id = toObjectId(accountId);
    if (!_id) return { kind: 'unknown_account' };
    const filter: Record<string, unknown> = opId === null ? { _id } : { _id, ...unseen(opId) };
    // The guard: a charge only matches while the balance covers it, so it can never go below zero.
    if (delta < 0 && !opts.mayGoNegative) filter.credits = { $gte: -delta };
    const inc: Record<string, number> = { credits: delta };
    const held = delta < 0 ? opts.held : undefined;
    // The key's credits on the account, in the same guarded update: of the period the key is in, and enough.
    if (held) takeHeld(filter, inc, held.keyId, held.period, -delta);
    const update: Record<string, unknown> = { $inc: inc, $set: { updatedAt: new Date() } };
    if (opId !== null) update.$push = remember(opId);
    if (usage) {
      // Usage counts in this same update: it applies exactly when (and as often as) the balance change does.
      const day = utcDay(usage.at);
      const fields = usageCounterPaths(day, usage.service, usage.source);
      if (delta < 0) {
        inc[fields.calls] = 1;
        inc[fields.credits] = -delta;
      } else {
        inc[fields.refunded] = delta;
      }
      update.$min = { usageOldestDay: day };
    }
    for (;;) {
      const after = await this.collection.findOneAndUpdate(filter, update, APPLIED_STATE);
      if (after) return { kind: 'applied', balance: after.credits, lowCredits: lowCreditsStateOf(after), recharge: rechargeStateOf(after) };
      const missed = await this.whyNot(_id, delta, opId, held);
      // Both the key's credits and the balance cover it now: they changed between the two (a move of
      // the key's credits onto the account landed), so the update is tried again.
      if (missed) return missed;
    }
  }

  /** Why a balance change matched nothing (null: it would match now). */
  private async whyNot(_id: Types.ObjectId, delta: number, opId: string | null, held: ApplyOptions['held']): Promise<ApplyResult | null> {
    // No match: tell apart an operation already applied or voided, a balance too low and an unknown
    // account. One read: `ops` holds only operations in flight, so it is short.
    const state = await this.collection.findOne({ _id }, { projection: { credits: 1, ...(opId === null ? {} : { ops: 1 }), ...(held ? { [`keyHeld.${held.keyId}`]: 1 } : {}) } });
    if (!state) return { kind: 'unknown_account' };
    if (opId !== null && state.ops.includes(opId)) return { kind: 'already_applied', balance: state.credits };
    if (opId !== null && state.ops.includes(voidMarker(opId))) return { kind: 'voided', balance: state.credits };
    if (held) {
      // The key first, as when its credits are reserved on the key: at its limit it is refused for that.
      const h = state.keyHeld?.[held.keyId];
      if (!h || h.period !== held.period || h.left < -delta) return { kind: 'key_short' };
      if (state.credits >= -delta) return null;
    }
    return { kind: 'insufficient', balance: state.credits };
  }

  async moveIn(accountId: string, keyId: string, amount: number, period: string, limit: number, op: string): Promise<'applied' | 'already_applied' | 'voided' | 'unknown_account'> {
    const _id = toObjectId(accountId);
    if (!_id) return 'unknown_account';
    const at = `$keyHeld.${keyId}`;
    // Rare (once per key and period, and when they run out): an update pipeline, so that the credits
    // of another period are replaced and the sum is capped at the limit in the same step.
    const kept = { $cond: [{ $eq: [`${at}.period`, { $literal: period }] }, { $ifNull: [`${at}.left`, 0] }, 0] };
    const res = await this.collection.updateOne({ _id, ...unseen(op) }, [
      {
        $set: {
          keyHeld: { $mergeObjects: [{ $ifNull: ['$keyHeld', {}] }, { [keyId]: { left: { $min: [{ $literal: limit }, { $add: [kept, { $literal: amount }] }] }, period: { $literal: period }, limit: { $literal: limit } } }] },
          ops: { $slice: [{ $concatArrays: [{ $ifNull: ['$ops', []] }, [{ $literal: op }]] }, -OPS_KEPT] },
          updatedAt: { $literal: new Date() },
        },
      },
    ] as Document[]);
    if (res.matchedCount === 1) return 'applied';
    const state = await this.collection.findOne({ _id }, { projection: { ops: 1 } });
    if (!state) return 'unknown_account';
    return state.ops.includes(op) ? 'already_applied' : 'voided';
  }

  async refundIn(accountId: string, keyId: string, amount: number, op: string | null): Promise<boolean> {
    const _id = toObjectId(accountId);
    if (!_id) return false;
    const at = `$keyHeld.${keyId}`;
    const filter: Record<string, unknown> = { _id, [`keyHeld.${keyId}`]: { $exists: true } };
    const set: Record<string, unknown> = {
      keyHeld: { $mergeObjects: ['$keyHeld', { [keyId]: { left: { $min: [`${at}.limit`, { $add: [`${at}.left`, { $literal: amount }] }] }, period: `${at}.period`, limit: `${at}.limit` } }] },
    };
    if (op !== null) {
      filter.keyRefundOps = { $ne: op };
      set.keyRefundOps = { $slice: [{ $concatArrays: [{ $ifNull: ['$keyRefundOps', []] }, [{ $literal: op }]] }, -KEY_REFUND_OPS_KEPT] };
    }
    const res = await this.collection.updateOne(filter, [{ $set: set }] as Document[]);
    if (res.matchedCount === 1) return true;
    if (op === null) return false;
    // Given before (a retried refund): nothing to do, and the key's document must not take it again.
    const state = await this.collection.findOne({ _id }, { projection: { keyRefundOps: 1 } });
    return state?.keyRefundOps?.includes(op) ?? false;
  }

  async heldOf(accountId: string): Promise<Map<string, HeldCredits>> {
    const _id = toObjectId(accountId);
    const doc = _id ? await this.collection.findOne({ _id }, { projection: { keyHeld: 1 } }) : null;
    return new Map(Object.entries(doc?.keyHeld ?? {}));
  }

  async recall(accountId: string, keyId: string): Promise<HeldCredits | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    const path = `keyHeld.${keyId}`;
    const before = await this.collection.findOneAndUpdate({ _id, [path]: { $exists: true } }, { $unset: { [path]: '' } }, { returnDocument: 'before', projection: { [path]: 1 } });
    return before?.keyHeld?.[keyId] ?? null;
  }

  async voidOp(accountId: string, opId: string): Promise<'voided' | 'already_applied' | 'unknown_account'> {
    const _id = toObjectId(accountId);
    if (!_id) return 'unknown_account';
    // The marker is not the id itself: a second sweep voiding the same op must hear 'voided' again,
    // not 'already_applied' (it would then mark an uncharged job charged).
    const res = await this.collection.updateOne({ _id, ...unseen(opId) }, { $push: remember(voidMarker(opId)), $set: { updatedAt: new Date() } });
    if (res.matchedCount === 1) return 'voided';
    const state = await this.collection.findOne({ _id }, { projection: { ops: 1 } });
    if (!state) return 'unknown_account';
    return state.ops.includes(opId) ? 'already_applied' : 'voided';
  }

  async settle(accountId: string, opId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.collection.updateOne({ _id, ops: opId }, { $pull: { ops: opId } });
  }

  async settleSoon(accountId: string, opId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.settlements.pull(_id, opId);
  }

  async balances(accountIds: readonly string[]): Promise<(number | null)[]> {
    const ids = accountIds.map(toObjectId).filter((x): x is Types.ObjectId => x !== null);
    const docs = ids.length ? await this.collection.find({ _id: { $in: ids } }, { projection: { credits: 1 } }).toArray() : [];
    const byId = new Map(docs.map((d) => [d._id.toHexString(), d.credits]));
    return accountIds.map((id) => byId.get(id.toLowerCase()) ?? null);
  }
}

/** Automatic recharge may start for this account: it is on and none is in flight. */
function rechargeStateOf(doc: Pick<AccountDoc, 'autoRecharge' | 'rechargeInFlight'>): RechargeState {
  return doc.autoRecharge?.enabled && !doc.rechargeInFlight ? { threshold: doc.autoRecharge.threshold } : null;
}

/** Leaves the usage counters out of a read of the account: only the usage store reads them. */
export const WITHOUT_USAGE = { usage: 0, usageOldestDay: 0 } as const;

/** What voidOp records instead of the id: an id voided never applies, and is told apart from one applied. */
function voidMarker(opId: string): string {
  return `void:${opId}`;
}

/** Guard and update parts of a charge that takes `amount` of a key's credits on the account, of `period`. */
function takeHeld(filter: Record<string, unknown>, inc: Record<string, number>, keyId: string, period: string, amount: number): void {
  filter[`keyHeld.${keyId}.period`] = period;
  filter[`keyHeld.${keyId}.left`] = { $gte: amount };
  inc[`keyHeld.${keyId}.left`] = -amount;
}

/** Filter part: the account has neither applied nor voided `opId`. */
function unseen(opId: string): Record<string, unknown> {
  return { ops: { $nin: [opId, voidMarker(opId)] } };
}

/** `$push` part: records `entry` in `ops`, within its bound. */
function remember(entry: string): Record<string, unknown> {
  return { ops: { $each: [entry], $slice: -OPS_KEPT } };
}

/** The driver's own collection object: no mongoose layer on hot paths. */
export function nativeCollection<T extends Document>(connection: Connection, name: string): Collection<T> {
  if (!connection.db) throw new Error('the database connection is not open');
  return connection.db.collection<T>(name);
}

/**
 * The id as an ObjectId (null: not one). Recent ones are kept: every charge names its account, and
 * parsing the hex again costs more than the lookup (an ObjectId is never changed once made).
 */
export function toObjectId(id: string): Types.ObjectId | null {
  const known = recentIds.get(id);
  if (known) return known;
  if (typeof id !== 'string' || !/^[0-9a-fA-F]{24}$/.test(id)) return null;
  return recentIds.add(id, new Types.ObjectId(id));
}
const recentIds = new Kept<string, Types.ObjectId>(4096);

export function ignoreExists(err: unknown): void {
  if ((err as { codeName?: string; code?: number }).codeName === 'NamespaceExists' || (err as { code?: number }).code === 48) return;
  throw err;
}

function toRecord(doc: Pick<AccountDoc, '_id' | 'name' | 'credits' | 'createdAt'>): AccountRecord {
  return { id: doc._id.toHexString(), name: doc.name, credits: doc.credits, createdAt: doc.createdAt };
}
