import type { Connection } from 'mongoose';
import type { Collection } from 'mongodb';
import type { CredentialStore, TwoFactorRecord } from '../domain/identity/ports.js';
import { nativeCollection, toObjectId } from './accounts.js';
import type { ConsoleUserDoc } from './models/console.js';

/**
 * The identity fields of a user's document in `console_users`, beside the ones the user store writes;
 * all absent in documents written before them (read as: no second factor).
 */
interface CredentialFields {
  _id: ConsoleUserDoc['_id'];
  passwordHash: string;
  totp?: { secret: string; enabledAt: Date; lastStep: number } | null;
  totpPending?: string | null;
  recoveryCodes?: { hash: string; usedAt: Date | null }[];
}

/** Password and second-factor changes of console users: each one guarded update on the user's document. */
export class MongoCredentialStore implements CredentialStore {
  private readonly collection: Collection<CredentialFields>;

  constructor(connection: Connection) {
    // The user store creates the collection and its indexes.
    this.collection = nativeCollection<CredentialFields>(connection, 'console_users');
  }

  async setPasswordHash(userId: string, passwordHash: string): Promise<boolean> {
    const _id = toObjectId(userId);
    return !!_id && (await this.collection.updateOne({ _id }, { $set: { passwordHash } })).matchedCount === 1;
  }

  async twoFactorOf(userId: string): Promise<TwoFactorRecord | null> {
    const _id = toObjectId(userId);
    const doc = _id ? await this.collection.findOne({ _id }, { projection: { totp: 1, totpPending: 1, recoveryCodes: 1 } }) : null;
    if (!doc) return null;
    return { totp: doc.totp ?? null, pendingSecret: doc.totpPending ?? null, recoveryCodes: doc.recoveryCodes ?? [] };
  }

  async setPendingSecret(userId: string, secret: string): Promise<boolean> {
    const _id = toObjectId(userId);
    return !!_id && (await this.collection.updateOne({ _id, totp: { $in: [null] } }, { $set: { totpPending: secret } })).matchedCount === 1;
  }

  async enableTotp(userId: string, secret: string, step: number, recoveryHashes: string[], at: Date): Promise<boolean> {
    const _id = toObjectId(userId);
    if (!_id) return false;
    const res = await this.collection.updateOne(
      { _id, totpPending: secret, totp: { $in: [null] } },
      { $set: { totp: { secret, enabledAt: at, lastStep: step }, totpPending: null, recoveryCodes: recoveryHashes.map((hash) => ({ hash, usedAt: null })) } },
    );
    return res.matchedCount === 1;
  }

  async acceptStep(userId: string, step: number): Promise<boolean> {
    const _id = toObjectId(userId);
    return !!_id && (await this.collection.updateOne({ _id, 'totp.lastStep': { $lt: step } }, { $set: { 'totp.lastStep': step } })).matchedCount === 1;
  }

  async useRecoveryCode(userId: string, hash: string, at: Date): Promise<boolean> {
    const _id = toObjectId(userId);
    if (!_id) return false;
    const res = await this.collection.updateOne(
      { _id, totp: { $ne: null }, recoveryCodes: { $elemMatch: { hash, usedAt: null } } },
      { $set: { 'recoveryCodes.$[code].usedAt': at } },
      { arrayFilters: [{ 'code.hash': hash, 'code.usedAt': null }] },
    );
    return res.matchedCount === 1;
  }

  async disableTotp(userId: string): Promise<boolean> {
    const _id = toObjectId(userId);
    if (!_id) return false;
    const res = await this.collection.updateOne({ _id, totp: { $ne: null } }, { $set: { totp: null, totpPending: null, recoveryCodes: [] } });
    return res.matchedCount === 1;
  }
}
