import type { Connection } from 'mongoose';
import type { Collection } from 'mongodb';
import type { BillingAccountStore } from '../domain/billing/ports.js';
import type { AutoRechargeSettings, BillingAccount } from '../domain/billing/types.js';
import { nativeCollection, toObjectId } from './accounts.js';
import { accountModel, type AccountDoc } from './models/account.js';

/** The billing fields of `accounts`: each change is one guarded update of the account document. */
export class MongoBillingAccountStore implements BillingAccountStore {
  private readonly collection: Collection<AccountDoc>;

  constructor(connection: Connection) {
    this.collection = nativeCollection<AccountDoc>(connection, accountModel(connection).collection.collectionName);
  }

  async get(accountId: string): Promise<BillingAccount | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    const doc = await this.collection.findOne(
      { _id },
      { projection: { stripeCustomerId: 1, cardSaved: 1, autoRecharge: 1, rechargeFailure: 1, rechargeInFlight: 1 } },
    );
    if (!doc) return null;
    const inFlight = doc.rechargeInFlight;
    return {
      customerId: doc.stripeCustomerId ?? null,
      cardSaved: doc.cardSaved === true,
      autoRecharge: doc.autoRecharge ?? null,
      rechargeFailure: doc.rechargeFailure ?? null,
      // The pack recorded with the claim; a marker without one (the previous release's, or a crash just after the claim) buys the settings' pack.
      rechargeInFlight: inFlight ? { id: inFlight.id, at: inFlight.at, credits: inFlight.credits ?? doc.autoRecharge?.credits ?? 0 } : null,
    };
  }

  async setCustomerOnce(accountId: string, customerId: string): Promise<string | null> {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    await this.collection.updateOne({ _id, stripeCustomerId: { $exists: false } }, { $set: { stripeCustomerId: customerId } });
    return (await this.collection.findOne({ _id }, { projection: { stripeCustomerId: 1 } }))?.stripeCustomerId ?? null;
  }

  async markCardSaved(accountId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.collection.updateOne({ _id, cardSaved: { $ne: true } }, { $set: { cardSaved: true } });
  }

  async saveAutoRecharge(accountId: string, settings: AutoRechargeSettings): Promise<void> {
    const _id = toObjectId(accountId);
    if (!_id) return;
    const set: Partial<AccountDoc> = { autoRecharge: { ...settings } };
    if (settings.enabled) set.rechargeFailure = null;
    await this.collection.updateOne({ _id }, { $set: set });
  }

  async claimRecharge(accountId: string, balance: number, claim: { id: string; at: Date; day: string; maxPerDay: number }) {
    const _id = toObjectId(accountId);
    if (!_id) return null;
    const count = `rechargeCounts.${claim.day}`;
    const after = await this.collection.findOneAndUpdate(
      {
        _id,
        'autoRecharge.enabled': true,
        'autoRecharge.threshold': { $gt: balance },
        rechargeInFlight: null,
        $or: [{ [count]: { $exists: false } }, { [count]: { $lt: claim.maxPerDay } }],
      },
      { $set: { rechargeInFlight: { id: claim.id, at: claim.at } }, $inc: { [count]: 1 } },
      { returnDocument: 'after', projection: { autoRecharge: 1, rechargeCounts: 1 } },
    );
    if (!after?.autoRecharge) return null;
    // The pack as it was when claimed, kept on the marker: a retry after the owner changes the pack
    // still buys this one (Stripe refuses the same idempotency key with another amount). Counts older
    // than the day before go (the day before stays for an instance whose clock is behind at midnight).
    const credits = after.autoRecharge.credits;
    const dayBefore = new Date(Date.parse(`${claim.day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
    const stale = Object.keys(after.rechargeCounts ?? {}).filter((day) => day < dayBefore);
    await this.collection.updateOne(
      { _id, 'rechargeInFlight.id': claim.id },
      { $set: { 'rechargeInFlight.credits': credits }, ...(stale.length > 0 && { $unset: Object.fromEntries(stale.map((day) => [`rechargeCounts.${day}`, ''])) }) },
    );
    return { credits };
  }

  async rechargesOn(accountId: string, day: string): Promise<number> {
    const _id = toObjectId(accountId);
    if (!_id) return 0;
    const doc = await this.collection.findOne({ _id }, { projection: { [`rechargeCounts.${day}`]: 1 } });
    return doc?.rechargeCounts?.[day] ?? 0;
  }

  async finishRecharge(accountId: string, triggerId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.collection.updateOne({ _id, 'rechargeInFlight.id': triggerId }, { $set: { rechargeInFlight: null } });
  }

  async markRechargeSent(accountId: string, triggerId: string, at: Date): Promise<boolean> {
    const _id = toObjectId(accountId);
    if (!_id) return false;
    const marked = await this.collection.updateOne(
      { _id, 'rechargeInFlight.id': triggerId, 'rechargeInFlight.sentAt': { $exists: false }, 'autoRecharge.enabled': true },
      { $set: { 'rechargeInFlight.sentAt': at } },
    );
    if (marked.modifiedCount === 1) return true;
    return (await this.collection.countDocuments({ _id, 'rechargeInFlight.id': triggerId, 'rechargeInFlight.sentAt': { $exists: true } })) === 1;
  }

  async cancelRecharge(accountId: string, triggerId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.collection.updateOne({ _id, 'rechargeInFlight.id': triggerId, 'rechargeInFlight.sentAt': { $exists: false } }, { $set: { rechargeInFlight: null } });
  }

  async failRecharge(accountId: string, triggerId: string, reason: string, at: Date): Promise<boolean> {
    const _id = toObjectId(accountId);
    if (!_id) return false;
    const res = await this.collection.updateOne(
      { _id, 'rechargeInFlight.id': triggerId },
      { $set: { rechargeInFlight: null, 'autoRecharge.enabled': false, rechargeFailure: { at, reason } } },
    );
    return res.modifiedCount === 1;
  }

  async staleRecharges(before: Date, limit: number): Promise<{ accountId: string; triggerId: string }[]> {
    const docs = await this.collection
      .find({ 'rechargeInFlight.at': { $lt: before } }, { projection: { rechargeInFlight: 1 } })
      .limit(limit)
      .toArray();
    return docs.filter((d) => d.rechargeInFlight).map((d) => ({ accountId: d._id.toHexString(), triggerId: d.rechargeInFlight!.id }));
  }
}
