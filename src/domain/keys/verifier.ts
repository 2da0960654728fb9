import type { KeyPrincipal } from '../principal.js';
import { hashKey, parseBearer } from './format.js';
import type { KeyChangeFeed, KeyStore } from './records.js';
import type { Revocations } from './revocations.js';

/** Expected outcomes of checking a key are values; the edge turns a refusal into the contract's 401. */
export type VerifyResult =
  | { ok: true; principal: KeyPrincipal }
  | { ok: false; reason: 'missing_authorization' | 'invalid_api_key_format' | 'invalid_api_key' };

interface CachedKey {
  keyId: string;
  accountId: string;
}

/**
 * Checks `Authorization` values against stored keys. Revocation is immediate: a key is cached only
 * while the change feed is live (a change stream on the keys collection), every change event evicts,
 * losing the feed drops the whole cache, and a local delete evicts at once (forget). Without a live
 * feed every check reads the database.
 */
export class KeyVerifier {
  private readonly cache = new Map<string, CachedKey>();
  /** Ids of keys known active, under the same rule as the cache (client tokens ask by key id). */
  private readonly activeIds = new Set<string>();
  /** Bumped by every change event: a database read older than the last event is not cached. */
  private epoch = 0;
  private readonly unsubscribe?: () => void;

  constructor(
    private readonly deps: {
      keys: Pick<KeyStore, 'findByHash' | 'findById'>;
      revocations: Revocations;
      /** Reports key changes from every instance; the cache is used only while it is live. */
      changes?: KeyChangeFeed;
      /** Keys held in the cache at most (least recently used go first). */
      cacheSize?: number;
    },
  ) {
    this.unsubscribe = deps.changes?.subscribe({
      changed: (keyId, deleted) => {
        this.forget(keyId);
        if (deleted) deps.revocations.announce(keyId);
      },
      lost: () => {
        this.epoch++;
        this.cache.clear();
        this.activeIds.clear();
      },
    });
  }

  /** The contract's refusals in order: header, format, unknown or deleted key. */
  async verify(authorization: string | undefined): Promise<VerifyResult> {
    const parsed = parseBearer(authorization);
    if (!parsed.ok) return parsed;
    const hash = hashKey(parsed.key);
    const cached = this.cache.get(hash);
    if (cached) {
      if (this.deps.changes?.live) return { ok: true, principal: { accountId: cached.accountId, keyId: cached.keyId } };
      this.cache.clear();
    }
    const epoch = this.epoch;
    const record = await this.deps.keys.findByHash(hash);
    if (!record || record.deletedAt) return { ok: false, reason: 'invalid_api_key' };
    // Cache only what no change event could have overtaken while we were reading.
    if (this.deps.changes?.live && epoch === this.epoch) this.remember(hash, { keyId: record.id, accountId: record.accountId });
    return { ok: true, principal: { accountId: record.accountId, keyId: record.id } };
  }

  /** True while the key exists and is not deleted (reads the database; no cache). */
  async isActive(keyId: string): Promise<boolean> {
    const record = /^[0-9a-f]{24}$/.test(keyId) ? await this.deps.keys.findById(keyId) : null;
    return Boolean(record && !record.deletedAt);
  }

  /**
   * isActive, answered from memory while the change feed is live (every deletion, on any instance,
   * evicts at once): the check a client token makes on every request.
   */
  async isLive(keyId: string): Promise<boolean> {
    if (this.deps.changes?.live && this.activeIds.has(keyId)) return true;
    const epoch = this.epoch;
    const active = await this.isActive(keyId);
    if (active && this.deps.changes?.live && epoch === this.epoch) {
      if (this.activeIds.size >= (this.deps.cacheSize ?? 10_000)) this.activeIds.clear();
      this.activeIds.add(keyId);
    }
    return active;
  }

  /** Drops the key from the cache (it changed or was deleted). */
  forget(keyId: string): void {
    this.epoch++;
    this.activeIds.delete(keyId);
    for (const [hash, entry] of this.cache) if (entry.keyId === keyId) this.cache.delete(hash);
  }

  /** Number of keys cached now (tests and metrics). */
  get cachedKeys(): number {
    return this.cache.size;
  }

  close(): void {
    this.unsubscribe?.();
  }

  private remember(hash: string, entry: CachedKey): void {
    if (this.cache.size >= (this.deps.cacheSize ?? 10_000)) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, entry);
  }
}
