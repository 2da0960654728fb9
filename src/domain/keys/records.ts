import type { KeyPermission } from './permissions.js';

/** How a key's credit limit comes back: reset to the limit at 00:00 UTC (daily) or on the 1st (monthly). */
export type KeyRefill = 'daily' | 'monthly';
export const KEY_REFILLS: readonly KeyRefill[] = ['daily', 'monthly'];

/**
 * The optional settings of a key (issue 24). A key stored before they existed has none of them:
 * it never expires, has no credit limit, the server's rate limit and every permission.
 */
export interface KeySettings {
  /** From this instant the key is refused (401 api_key_expired); null: never. */
  expiresAt: Date | null;
  /** The most the key may spend (per refill period when it refills); null: no limit. */
  creditLimit: number | null;
  /** Only with a credit limit. */
  refill: KeyRefill | null;
  /** This key's own requests per minute instead of RATE_LIMIT_PER_MINUTE; null: the server's. */
  rateLimitPerMinute: number | null;
  /** What the key may do; null: every permission (keys stored before permissions existed). */
  permissions: KeyPermission[] | null;
}

/** Persistence of API keys, implemented in src/data (MongoDB) and by test fakes. */
export interface KeyRecord extends KeySettings {
  id: string;
  accountId: string;
  name: string;
  /** SHA-256 (hex) of the full key; the key itself is never stored. */
  hash: string;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  deletedAt: Date | null;
  /** What the key may still spend (with a credit limit), as of its last charge or refund. */
  creditsLeft: number | null;
  /** The refill period `creditsLeft` belongs to (`2026-11-27` daily, `2026-11` monthly); null: none yet. */
  refilledFor: string | null;
  /** The key this one replaced by a roll. */
  rolledFrom: string | null;
  /** When `key.expiring` was published for the current `expiresAt` (an edit of the expiry clears it). */
  expiringNotifiedAt: Date | null;
  /** Moves with every change of a setting (not with charges or uses): the settings' version. */
  updatedAt?: Date;
}

export type NewKey = Pick<KeyRecord, 'accountId' | 'name' | 'hash' | 'prefix' | 'createdAt'> & Partial<KeySettings> & { rolledFrom?: string | null };

/** A change of settings; an absent field stays as it is. */
export type KeySettingsChange = Partial<KeySettings>;

export interface KeyStore {
  insert(key: NewKey): Promise<KeyRecord>;
  /** The key with this hash, deleted or not. */
  findByHash(hash: string): Promise<KeyRecord | null>;
  findById(keyId: string): Promise<KeyRecord | null>;
  listForAccount(accountId: string): Promise<KeyRecord[]>;
  /** Sets deletedAt if the key is not deleted yet; returns the key after the change, null if unknown. */
  softDelete(keyId: string, at: Date): Promise<KeyRecord | null>;
  /** Raises lastUsedAt of each key to the given time (never lowers it: `$max`). */
  recordUse(uses: readonly { keyId: string; at: Date }[]): Promise<void>;
  /**
   * One guarded update: applies `change` to the key if it is not deleted and still as `expected` says
   * (its expiresAt, creditLimit and creditsLeft as read), so a concurrent charge or edit is never lost
   * (the caller reads again and retries). `creditsLeft` and `refilledFor` come with a credit-limit change.
   * Returns the key after the change, or null when it was not as expected (or deleted).
   */
  updateSettings(
    keyId: string,
    expected: Pick<KeyRecord, 'expiresAt' | 'creditLimit' | 'creditsLeft'>,
    change: KeySettingsChange & { creditsLeft?: number | null; refilledFor?: string | null },
    at: Date,
  ): Promise<KeyRecord | null>;
  /** Brings expiresAt forward to `at` (never later than it is): the end of a rolled key's grace. */
  expireBy(keyId: string, at: Date, now: Date): Promise<KeyRecord | null>;
}

/**
 * Changes to stored keys as the database reports them to this process. A cache of keys is only
 * correct while `live` is true: then every update and delete of any key, by any instance, is reported.
 */
export interface KeyChangeFeed {
  readonly live: boolean;
  subscribe(listener: KeyChangeListener): () => void;
}

export interface KeyChangeListener {
  /**
   * A key was updated or deleted (`deleted`: it now has deletedAt or is gone). `version`: the key's
   * settings version after the change (its updatedAt in ms) when the feed knows it; a change that left
   * it as it was (a charge, a refund) changed no setting.
   */
  changed(keyId: string, deleted: boolean, version?: number): void;
  /** The feed stopped being live (stream error or close): whatever was cached may be stale. */
  lost(): void;
}
