import { invalid } from '../errors.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { AccountStore } from '../credits/records.js';
import { displayPrefix, generateKey, hashKey } from './format.js';
import type { KeyRecord, KeyStore } from './records.js';

/** A new key as shown once, at creation. */
export interface CreatedKey {
  id: string;
  key: string;
  prefix: string;
  name: string;
  createdAt: Date;
}

export interface KeySummary {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  deletedAt: Date | null;
}

export const MAX_KEY_NAME_LENGTH = 100;

/**
 * Creating (shown once), listing and soft-deleting API keys, audited with who did it and from where.
 * Only the console and the admin CLI reach this; no API-key door does.
 */
export class KeyManager {
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      keys: KeyStore;
      accounts: Pick<AccountStore, 'find'>;
      audit: AuditStore;
      /** Told of every deletion made here, at once (local cache eviction and revocation fan-out). */
      onDeleted?: (keyId: string) => void;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  async create(accountId: unknown, name: unknown, actor: AuditActor): Promise<CreatedKey> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    if (typeof name !== 'string' || name.trim() === '') throw invalid('name', 'name must not be empty');
    if (name.trim().length > MAX_KEY_NAME_LENGTH) throw invalid('name', `name must be at most ${MAX_KEY_NAME_LENGTH} characters`);
    const key = generateKey();
    const createdAt = this.now();
    const record = await this.deps.keys.insert({ accountId: account.id, name: name.trim(), hash: hashKey(key), prefix: displayPrefix(key), createdAt });
    await this.deps.audit.record(
      { ...actor, event: 'key.created', accountId: account.id, keyId: record.id, keyPrefix: record.prefix, details: { name: record.name } },
      createdAt,
    );
    return { id: record.id, key, prefix: record.prefix, name: record.name, createdAt };
  }

  /** Every key of the account, deleted ones included (the CLI shows them; the console filters). */
  async list(accountId: unknown): Promise<KeySummary[]> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    return (await this.deps.keys.listForAccount(account.id)).map(summary);
  }

  /**
   * Soft-deletes a key (idempotent: deleting a deleted key returns its original deletion). With
   * `onlyAccount`, a key of another account is answered like an unknown one.
   */
  async delete(keyId: unknown, actor: AuditActor, onlyAccount?: string): Promise<{ id: string; deletedAt: Date }> {
    const id = typeof keyId === 'string' ? keyId.trim().toLowerCase() : '';
    const existing = /^[0-9a-f]{24}$/.test(id) ? await this.deps.keys.findById(id) : null;
    if (!existing || (onlyAccount !== undefined && existing.accountId !== onlyAccount)) throw invalid('id', 'id must be the id of an existing key');
    if (existing.deletedAt) return { id, deletedAt: existing.deletedAt };
    const at = this.now();
    const after = await this.deps.keys.softDelete(id, at);
    if (!after?.deletedAt) throw invalid('id', 'id must be the id of an existing key');
    this.deps.onDeleted?.(id);
    if (after.deletedAt.getTime() === at.getTime()) {
      await this.deps.audit.record({ ...actor, event: 'key.deleted', accountId: after.accountId, keyId: id, keyPrefix: after.prefix, details: { name: after.name } }, at);
    }
    return { id, deletedAt: after.deletedAt };
  }
}

function summary(k: KeyRecord): KeySummary {
  return { id: k.id, name: k.name, prefix: k.prefix, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, deletedAt: k.deletedAt };
}
