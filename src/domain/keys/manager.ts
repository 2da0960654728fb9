import { invalid } from '../errors.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { AccountStore, HeldCredits, KeyCreditsOnAccount } from '../credits/records.js';
import { heldPeriod } from './credit-limit.js';
import { displayPrefix, generateKey, hashKey } from './format.js';
import { effectiveKeyPermissions, type KeyPermission } from './permissions.js';
import type { KeyRecord, KeyRefill, KeySettings, KeySettingsChange, KeyStore } from './records.js';
import { creditsLeftNow, parseGrace, parseKeySettings, periodOfRefill, refillPeriod, type KeySettingsInput } from './settings.js';

/** A new key as shown once, at creation. */
export interface CreatedKey {
  id: string;
  key: string;
  prefix: string;
  name: string;
  createdAt: Date;
}

/** A rolled key: the new key (shown once) and when the old one stops working. */
export interface RolledKey extends CreatedKey {
  oldKeyId: string;
  oldKeyExpiresAt: Date;
}

export interface KeySummary {
  id: string;
  name: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  deletedAt: Date | null;
  expiresAt: Date | null;
  creditLimit: number | null;
  /** What the key may spend now (a due refill counted); null without a credit limit. */
  creditsLeft: number | null;
  refill: KeyRefill | null;
  rateLimitPerMinute: number | null;
  /** Every permission for a key stored without a list. */
  permissions: readonly KeyPermission[];
  rolledFrom: string | null;
}

export const MAX_KEY_NAME_LENGTH = 100;

/** Tries of a guarded settings update that a concurrent charge or edit overtook. */
const UPDATE_TRIES = 8;

/**
 * Creating (shown once), listing, editing, rolling and soft-deleting API keys, audited with who did it
 * and from where. Only the console and the admin CLI reach this; no API-key door does.
 */
export class KeyManager {
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      keys: KeyStore;
      accounts: Pick<AccountStore, 'find'>;
      /** Capped keys' credits on their accounts (issue 33): part of what a key may spend. */
      held?: Pick<KeyCreditsOnAccount, 'heldOf' | 'recall'>;
      audit: AuditStore;
      /** Told of every deletion made here, at once (local cache eviction and revocation fan-out). */
      onDeleted?: (keyId: string) => void;
      /** Told of every change of settings made here, at once (local cache eviction). */
      onChanged?: (keyId: string) => void;
      now?: () => Date;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
  }

  async create(accountId: unknown, name: unknown, actor: AuditActor, settings: KeySettingsInput = {}): Promise<CreatedKey> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    const trimmed = parseName(name);
    const createdAt = this.now();
    const chosen = parseKeySettings(settings, createdAt);
    const key = generateKey();
    const record = await this.deps.keys.insert({ accountId: account.id, name: trimmed, hash: hashKey(key), prefix: displayPrefix(key), createdAt, ...chosen });
    await this.deps.audit.record(
      { ...actor, event: 'key.created', accountId: account.id, keyId: record.id, keyPrefix: record.prefix, details: { name: record.name, ...auditedSettings(chosen) } },
      createdAt,
    );
    return { id: record.id, key, prefix: record.prefix, name: record.name, createdAt };
  }

  /** Every key of the account, deleted ones included (the CLI shows them; the console filters). */
  async list(accountId: unknown): Promise<KeySummary[]> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    const now = this.now();
    const [keys, held] = await Promise.all([this.deps.keys.listForAccount(account.id), this.heldOf(account.id)]);
    return keys.map((k) => summary(k, now, held.get(k.id)));
  }

  /** One key as the caller may see it (`onlyAccount`: another account's key is unknown). */
  async get(keyId: unknown, onlyAccount?: string): Promise<KeySummary> {
    const key = await this.existing(keyId, onlyAccount);
    return summary(key, this.now(), (await this.heldOf(key.accountId)).get(key.id));
  }

  private async heldOf(accountId: string): Promise<Map<string, HeldCredits>> {
    return this.deps.held ? await this.deps.held.heldOf(accountId) : new Map();
  }

  /**
   * Changes a key's settings (an absent one stays; null clears it), in one guarded update that a
   * concurrent charge cannot undo: a new credit limit moves what is left by the difference (never
   * below 0). A deleted or expired key cannot be edited. Audited `key.updated` with what changed.
   */
  async update(keyId: unknown, settings: KeySettingsInput, actor: AuditActor, onlyAccount?: string): Promise<KeySummary> {
    let key = await this.active(keyId, onlyAccount);
    // The key's credits taken back off its account (a new limit or refill is decided on the key's
    // document alone), summed over the tries: each may find more moved there meanwhile.
    let recalled = 0;
    for (let tries = 0; ; tries++) {
      const now = this.now();
      const change: KeySettingsChange & { creditsLeft?: number | null; refilledFor?: string | null } = parseKeySettings(settings, now, key);
      const limit = change.creditLimit !== undefined ? change.creditLimit : key.creditLimit;
      const refill = change.refill !== undefined ? change.refill : key.refill;
      if (limit !== key.creditLimit || refill !== key.refill) {
        const back = this.deps.held && key.creditLimit !== null ? await this.deps.held.recall(key.accountId, key.id) : null;
        if (back && back.period === currentPeriod(key, now)) recalled += back.left;
        const stored = creditsLeftNow(key, now);
        const left = stored === null ? null : Math.min(key.creditLimit ?? stored, stored + recalled);
        change.creditsLeft = limit === null ? null : left === null || key.creditLimit === null ? limit : Math.max(0, left + limit - key.creditLimit);
        change.refilledFor = limit !== null && refill ? refillPeriod(refill, now) : null;
        change.refill = refill;
      }
      const after = await this.deps.keys.updateSettings(key.id, key, change, now);
      if (after) {
        this.deps.onChanged?.(key.id);
        const { creditsLeft: _left, refilledFor: _period, ...visible } = change;
        await this.deps.audit.record(
          { ...actor, event: 'key.updated', accountId: after.accountId, keyId: after.id, keyPrefix: after.prefix, details: { name: after.name, ...auditedSettings(visible) } },
          now,
        );
        return summary(after, now, (await this.heldOf(after.accountId)).get(after.id));
      }
      if (tries + 1 >= UPDATE_TRIES) throw new Error(`key ${key.id}: settings update kept being overtaken`);
      key = await this.active(key.id, onlyAccount);
    }
  }

  /**
   * Replaces a key with a new one (shown once) that has its name and settings; the old key keeps
   * working for `grace` (0 to 7 days), never later than its own expiry. Audited `key.rolled`.
   */
  async roll(keyId: unknown, grace: unknown, actor: AuditActor, onlyAccount?: string): Promise<RolledKey> {
    const graceMs = parseGrace(grace ?? '0');
    const old = await this.active(keyId, onlyAccount);
    const now = this.now();
    const key = generateKey();
    const settings: Partial<KeySettings> = {
      expiresAt: old.expiresAt,
      creditLimit: old.creditLimit,
      refill: old.refill,
      rateLimitPerMinute: old.rateLimitPerMinute,
      permissions: old.permissions,
    };
    const record = await this.deps.keys.insert({ accountId: old.accountId, name: old.name, hash: hashKey(key), prefix: displayPrefix(key), createdAt: now, rolledFrom: old.id, ...settings });
    // The new key starts from what the old one may still spend, not from a fresh limit.
    const left = withHeld(old, now, (await this.heldOf(old.accountId)).get(old.id));
    if (record.creditLimit !== null && left !== record.creditsLeft) {
      await this.deps.keys.updateSettings(record.id, record, { creditsLeft: left, refilledFor: old.refill ? refillPeriod(old.refill, now) : null }, now);
    }
    const ended = await this.deps.keys.expireBy(old.id, new Date(now.getTime() + graceMs), now);
    this.deps.onChanged?.(old.id);
    const oldKeyExpiresAt = ended?.expiresAt ?? now;
    await this.deps.audit.record(
      {
        ...actor,
        event: 'key.rolled',
        accountId: old.accountId,
        keyId: record.id,
        keyPrefix: record.prefix,
        details: { name: old.name, oldKeyId: old.id, oldKeyPrefix: old.prefix, newKeyId: record.id, newKeyPrefix: record.prefix, graceSeconds: graceMs / 1000, oldKeyExpiresAt },
      },
      now,
    );
    return { id: record.id, key, prefix: record.prefix, name: record.name, createdAt: now, oldKeyId: old.id, oldKeyExpiresAt };
  }

  /**
   * Soft-deletes a key (idempotent: deleting a deleted key returns its original deletion). With
   * `onlyAccount`, a key of another account is answered like an unknown one.
   */
  async delete(keyId: unknown, actor: AuditActor, onlyAccount?: string): Promise<{ id: string; deletedAt: Date }> {
    const existing = await this.existing(keyId, onlyAccount);
    const id = existing.id;
    if (existing.deletedAt) return { id, deletedAt: existing.deletedAt };
    const at = this.now();
    const after = await this.deps.keys.softDelete(id, at);
    if (!after?.deletedAt) throw invalid('id', 'id must be the id of an existing key');
    this.deps.onDeleted?.(id);
    // Its credits on the account are no one's now (a failure leaves them there, unused).
    await this.deps.held?.recall(after.accountId, id).catch(() => undefined);
    if (after.deletedAt.getTime() === at.getTime()) {
      await this.deps.audit.record({ ...actor, event: 'key.deleted', accountId: after.accountId, keyId: id, keyPrefix: after.prefix, details: { name: after.name } }, at);
    }
    return { id, deletedAt: after.deletedAt };
  }

  private async existing(keyId: unknown, onlyAccount?: string): Promise<KeyRecord> {
    const id = typeof keyId === 'string' ? keyId.trim().toLowerCase() : '';
    const existing = /^[0-9a-f]{24}$/.test(id) ? await this.deps.keys.findById(id) : null;
    if (!existing || (onlyAccount !== undefined && existing.accountId !== onlyAccount)) throw invalid('id', 'id must be the id of an existing key');
    return existing;
  }

  /** A key that may still be edited or rolled: not deleted, not expired. */
  private async active(keyId: unknown, onlyAccount?: string): Promise<KeyRecord> {
    const key = await this.existing(keyId, onlyAccount);
    if (key.deletedAt) throw invalid('id', 'the key is deleted');
    if (key.expiresAt && key.expiresAt.getTime() <= this.now().getTime()) throw invalid('id', 'the key has expired');
    return key;
  }
}

function parseName(name: unknown): string {
  if (typeof name !== 'string' || name.trim() === '') throw invalid('name', 'name must not be empty');
  if (name.trim().length > MAX_KEY_NAME_LENGTH) throw invalid('name', `name must be at most ${MAX_KEY_NAME_LENGTH} characters`);
  return name.trim();
}

/** The settings an audit entry records (what was chosen or changed). */
function auditedSettings(change: KeySettingsChange): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(change)) if (value !== undefined) out[field] = value;
  return out;
}

/** The period a key's credits are in now, as its account names it (see heldPeriod). */
function currentPeriod(k: Pick<KeyRecord, 'refill'>, now: Date): string {
  return heldPeriod(periodOfRefill(k.refill, now));
}

/** What a key may spend now: its document's credits left and those on its account of the current period. */
function withHeld(k: KeyRecord, now: Date, held: HeldCredits | undefined): number | null {
  const left = creditsLeftNow(k, now);
  if (left === null || !held || held.period !== currentPeriod(k, now)) return left;
  return Math.min(k.creditLimit ?? left, left + held.left);
}

function summary(k: KeyRecord, now: Date, held?: HeldCredits): KeySummary {
  return {
    id: k.id,
    name: k.name,
    prefix: k.prefix,
    createdAt: k.createdAt,
    lastUsedAt: k.lastUsedAt,
    deletedAt: k.deletedAt,
    expiresAt: k.expiresAt,
    creditLimit: k.creditLimit,
    creditsLeft: withHeld(k, now, held),
    refill: k.refill,
    rateLimitPerMinute: k.rateLimitPerMinute,
    permissions: effectiveKeyPermissions(k.permissions),
    rolledFrom: k.rolledFrom,
  };
}
