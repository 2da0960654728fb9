/**
 * Memberships (in `console_users`) and team settings (on `accounts`): every change is one guarded
 * update of one document; the last-owner rule rides on the account's `ownerCount` (src/domain/team/ports.ts).
 */
import type { Connection } from 'mongoose';
import type { Collection, Filter } from 'mongodb';
import type { Membership } from '../domain/console/records.js';
import type { Role } from '../domain/team/permissions.js';
import type { AccountTeamStore, MemberRecord, MembershipStore } from '../domain/team/ports.js';
import { nativeCollection, toObjectId } from './accounts.js';
import { membersOf, membershipsOf, writeOutLegacyMemberships } from './console.js';
import { accountModel, type AccountDoc } from './models/account.js';
import { consoleUserModel, type ConsoleUserDoc } from './models/console.js';

export class MongoTeamStore implements MembershipStore, AccountTeamStore {
  private readonly users: Collection<ConsoleUserDoc>;
  private readonly accounts: Collection<AccountDoc>;

  /** Collections and indexes are made by MongoUserStore and MongoAccountStore. */
  constructor(connection: Connection) {
    this.users = nativeCollection<ConsoleUserDoc>(connection, consoleUserModel(connection).collection.collectionName);
    this.accounts = nativeCollection<AccountDoc>(connection, accountModel(connection).collection.collectionName);
  }

  async members(accountId: string): Promise<MemberRecord[]> {
    const _id = toObjectId(accountId);
    if (!_id) return [];
    const docs = await this.users.find(membersOf(_id)).toArray();
    return docs.map((d) => memberOf(d, accountId)!).sort((a, b) => a.joinedAt.getTime() - b.joinedAt.getTime() || a.email.localeCompare(b.email));
  }

  async member(accountId: string, userId: string): Promise<MemberRecord | null> {
    const account = toObjectId(accountId);
    const user = toObjectId(userId);
    if (!account || !user) return null;
    const doc = await this.users.findOne({ _id: user });
    return doc ? memberOf(doc, accountId) : null;
  }

  async membershipsOf(userId: string): Promise<{ email: string; memberships: Membership[]; has2fa: boolean } | null> {
    const _id = toObjectId(userId);
    const doc = _id ? await this.users.findOne({ _id }) : null;
    return doc ? { email: doc.email, memberships: membershipsOf(doc), has2fa: twoFactorOn(doc) } : null;
  }

  async userByEmail(email: string): Promise<{ userId: string; email: string } | null> {
    const doc = await this.users.findOne({ email }, { projection: { email: 1 } });
    return doc ? { userId: doc._id.toHexString(), email: doc.email } : null;
  }

  async add(userId: string, m: Membership): Promise<boolean> {
    const user = toObjectId(userId);
    const account = toObjectId(m.accountId);
    if (!user || !account) return false;
    await writeOutLegacyMemberships(this.users, { _id: user });
    const res = await this.users.updateOne({ _id: user, 'memberships.accountId': { $ne: account } }, { $push: { memberships: { accountId: account, role: m.role, joinedAt: m.joinedAt } } });
    return res.modifiedCount === 1;
  }

  async setRole(accountId: string, userId: string, from: Role, to: Role): Promise<boolean> {
    const filter = await this.membershipFilter(accountId, userId, from);
    if (!filter) return false;
    const res = await this.users.updateOne(filter, { $set: { 'memberships.$[m].role': to } }, { arrayFilters: [{ 'm.accountId': toObjectId(accountId) }] });
    return res.modifiedCount === 1;
  }

  async remove(accountId: string, userId: string, from: Role): Promise<boolean> {
    const filter = await this.membershipFilter(accountId, userId, from);
    if (!filter) return false;
    const res = await this.users.updateOne(filter, { $pull: { memberships: { accountId: toObjectId(accountId)! } } });
    return res.modifiedCount === 1;
  }

  async countOwners(accountId: string): Promise<number> {
    const _id = toObjectId(accountId);
    if (!_id) return 0;
    return this.users.countDocuments({
      $or: [{ memberships: { $elemMatch: { accountId: _id, role: 'owner' } } }, { memberships: { $exists: false }, accountId: _id }],
    });
  }

  async settings(accountId: string): Promise<{ name: string; ownerCount: number | null; require2fa: boolean } | null> {
    const _id = toObjectId(accountId);
    const doc = _id ? await this.accounts.findOne({ _id }, { projection: { name: 1, ownerCount: 1, require2fa: 1 } }) : null;
    return doc ? { name: doc.name, ownerCount: doc.ownerCount ?? null, require2fa: doc.require2fa === true } : null;
  }

  async startOwnerCount(accountId: string, count: number): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.accounts.updateOne({ _id, ownerCount: { $exists: false } }, { $set: { ownerCount: count } });
  }

  async takeOwner(accountId: string): Promise<boolean> {
    const _id = toObjectId(accountId);
    if (!_id) return false;
    return (await this.accounts.updateOne({ _id, ownerCount: { $gte: 2 } }, { $inc: { ownerCount: -1 } })).modifiedCount === 1;
  }

  async giveOwner(accountId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.accounts.updateOne({ _id, ownerCount: { $exists: true } }, { $inc: { ownerCount: 1 } });
  }

  async dropOwner(accountId: string): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.accounts.updateOne({ _id, ownerCount: { $gt: 0 } }, { $inc: { ownerCount: -1 } });
  }

  async setRequire2fa(accountId: string, required: boolean): Promise<void> {
    const _id = toObjectId(accountId);
    if (_id) await this.accounts.updateOne({ _id }, { $set: { require2fa: required } });
  }

  async names(accountIds: readonly string[]): Promise<Map<string, string>> {
    const ids = accountIds.map(toObjectId).filter((id) => id !== null);
    const docs = ids.length ? await this.accounts.find({ _id: { $in: ids } }, { projection: { name: 1 } }).toArray() : [];
    return new Map(docs.map((d) => [d._id.toHexString(), d.name]));
  }

  /** The user's document while its membership of the account has role `from` (a pre-teams user written out first). */
  private async membershipFilter(accountId: string, userId: string, from: Role): Promise<Filter<ConsoleUserDoc> | null> {
    const account = toObjectId(accountId);
    const user = toObjectId(userId);
    if (!account || !user) return null;
    await writeOutLegacyMemberships(this.users, { _id: user });
    return { _id: user, memberships: { $elemMatch: { accountId: account, role: from } } };
  }
}

function memberOf(doc: ConsoleUserDoc, accountId: string): MemberRecord | null {
  const m = membershipsOf(doc).find((x) => x.accountId === accountId);
  return m ? { userId: doc._id.toHexString(), email: doc.email, role: m.role, joinedAt: m.joinedAt, has2fa: twoFactorOn(doc) } : null;
}

/** Whether the user has two-factor authentication on (the identity fields of `console_users`). */
function twoFactorOn(doc: ConsoleUserDoc): boolean {
  return Boolean((doc as { totp?: { enabledAt?: Date | null } | null }).totp?.enabledAt);
}
