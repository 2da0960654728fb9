import type { KeyGrant, KeyPrincipal } from '../principal.js';
import { hashKey, parseBearer } from './format.js';
import { effectiveKeyPermissions } from './permissions.js';
import type { GrantChanges } from './grant-changes.js';
import type { KeyChangeFeed, KeyRecord, KeyStore } from './records.js';
import type { Revocations } from './revocations.js';

/** Expected outcomes of checking a key are values; the edge turns a refusal into the contract's 401. */
export type VerifyResult =
  | { ok: true; principal: KeyPrincipal & KeyGrant }
  | { ok: false; reason: 'missing_authorization' | 'invalid_api_key_format' | 'invalid_api_key' | 'api_key_expired' };

interface CachedKey {
  keyId: string;
  accountId: string;
  grant: KeyGrant;
  /** The caller every request with this key is, made once (frozen: requests share it). */
  principal: KeyPrincipal & KeyGrant;
  expiresAt: Date | null;
  /** The key's settings version (updatedAt, ms) when it was read. */
  version: number;
}

/** setTimeout's longest delay; a later expiry is waited for in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Checks `Authorization` values against stored keys. Revocation is immediate: a key is cached only
 * while the change feed is live (a change stream on the keys collection), every change of a setting
 * evicts, losing the feed drops the whole cache, and a local delete evicts at once (forget). Without a
 * live feed every check reads the database.
 *
 * Expiry is a time, so it is scheduled, not polled: every check compares expiresAt with the clock, and
 * each key seen here with an expiry gets one timer that announces it to the revocation listeners (open
 * subscriptions, sockets and client tokens of the key end) when it comes.
 *
 * Every other change of a key's settings is announced to the grant listeners with the key's grant as
 * read after the change (open subscriptions the key may no longer run end).
 */
export class KeyVerifier {
  private readonly cache = new Map<string, CachedKey>();
  /** Keys known active by id, under the same rule as the cache (client tokens ask by key id). */
  private readonly activeIds = new Map<string, CachedKey>();
  private readonly expiryTimers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  /** Bumped by every change event: a database read older than the last event is not cached. */
  private epoch = 0;
  private readonly unsubscribe?: () => void;
  private readonly now: () => Date;

  constructor(
    private readonly deps: {
      keys: Pick<KeyStore, 'findByHash' | 'findById'>;
      revocations: Revocations;
      /** Told the key's grant after each change of its settings (on any instance). */
      grants?: GrantChanges;
      /** Reports key changes from every instance; the cache is used only while it is live. */
      changes?: KeyChangeFeed;
      /** Keys held in the cache at most (least recently used go first). */
      cacheSize?: number;
      now?: () => Date;
      onError?: (err: unknown) => void;
    },
  ) {
    this.now = deps.now ?? (() => new Date());
    this.unsubscribe = deps.changes?.subscribe({
      changed: (keyId, deleted, version) => {
        if (deleted) {
          this.forget(keyId);
          deps.revocations.announce(keyId, 'deleted');
          return;
        }
        // Cached at this very version (a charge, which changes no setting, or a read that overtook
        // the change's event): nothing to evict, but the grant is told, in case that read was the
        // first here to see a change.
        const known = version !== undefined ? this.cachedAt(keyId, version) : undefined;
        if (known) deps.grants?.announce(keyId, known.grant);
        else this.refresh(keyId);
      },
      lost: () => {
        this.epoch++;
        this.cache.clear();
        this.activeIds.clear();
      },
    });
  }

  /**
   * The contract's refusals in order: header, format, unknown or deleted key, expired key. Answered at
   * once when memory knows (a malformed header, or a cached key while the feed is live: almost every
   * request), a promise only when the database must be read.
   */
  verify(authorization: string | undefined): VerifyResult | Promise<VerifyResult> {
    const parsed = parseBearer(authorization);
    if (!parsed.ok) return parsed;
    const hash = hashKey(parsed.key);
    const cached = this.cache.get(hash);
    if (cached) {
      if (this.deps.changes?.live) return this.admit(cached);
      this.cache.clear();
    }
    return this.readByHash(hash);
  }

  private async readByHash(hash: string): Promise<VerifyResult> {
    const epoch = this.epoch;
    const record = await this.deps.keys.findByHash(hash);
    if (!record || record.deletedAt) return { ok: false, reason: 'invalid_api_key' };
    const entry = toCached(record);
    // Cache only what no change event could have overtaken while we were reading.
    if (this.deps.changes?.live && epoch === this.epoch) this.remember(hash, entry);
    return this.admit(entry);
  }

  /** True while the key exists, is not deleted and has not expired (reads the database; no cache). */
  async isActive(keyId: string): Promise<boolean> {
    return (await this.read(keyId)) !== null;
  }

  /**
   * The key's grant while it is active (else null), answered from memory while the change feed is live
   * (every change, on any instance, evicts at once): the check a client token makes on every request.
   */
  async liveKey(keyId: string): Promise<KeyGrant | null> {
    const known = this.deps.changes?.live ? this.activeIds.get(keyId) : undefined;
    if (known) return this.expired(known) ? null : known.grant;
    const epoch = this.epoch;
    const entry = await this.read(keyId);
    if (entry && this.deps.changes?.live && epoch === this.epoch) {
      if (this.activeIds.size >= (this.deps.cacheSize ?? 10_000)) this.activeIds.clear();
      this.activeIds.set(keyId, entry);
    }
    return entry?.grant ?? null;
  }

  /** isActive, from memory while the feed is live (see liveKey). */
  async isLive(keyId: string): Promise<boolean> {
    return (await this.liveKey(keyId)) !== null;
  }

  /**
   * The key's settings changed: drop what is cached, read it, announce its grant and schedule its (new)
   * expiry at once, not at its next request, so its open subscriptions and client tokens end on time.
   */
  refresh(keyId: string): void {
    this.forget(keyId);
    this.watchStored(keyId);
  }

  /** Drops the key from the cache (it changed or was deleted) and its expiry timer. */
  forget(keyId: string): void {
    this.epoch++;
    this.activeIds.delete(keyId);
    for (const [hash, entry] of this.cache) if (entry.keyId === keyId) this.cache.delete(hash);
    const timer = this.expiryTimers.get(keyId);
    if (timer) clearTimeout(timer.timer);
    this.expiryTimers.delete(keyId);
  }

  /** Number of keys cached now (tests and metrics). */
  get cachedKeys(): number {
    return this.cache.size;
  }

  close(): void {
    this.unsubscribe?.();
    for (const { timer } of this.expiryTimers.values()) clearTimeout(timer);
    this.expiryTimers.clear();
  }

  private admit(entry: CachedKey): VerifyResult {
    if (this.expired(entry)) return { ok: false, reason: 'api_key_expired' };
    this.watchExpiry(entry.keyId, entry.expiresAt);
    return { ok: true, principal: entry.principal };
  }

  private expired(entry: CachedKey): boolean {
    return entry.expiresAt !== null && entry.expiresAt.getTime() <= this.now().getTime();
  }

  /** The active key by id (deleted, expired or unknown: null), scheduling its expiry. */
  private async read(keyId: string): Promise<CachedKey | null> {
    const record = /^[0-9a-f]{24}$/.test(keyId) ? await this.deps.keys.findById(keyId) : null;
    if (!record || record.deletedAt) return null;
    const entry = toCached(record);
    if (this.expired(entry)) return null;
    this.watchExpiry(keyId, entry.expiresAt);
    return entry;
  }

  /** What is cached of the key at this settings version, if anything. */
  private cachedAt(keyId: string, version: number): CachedKey | undefined {
    const active = this.activeIds.get(keyId);
    if (active) return active.version === version ? active : undefined;
    for (const entry of this.cache.values()) if (entry.keyId === keyId) return entry.version === version ? entry : undefined;
    return undefined;
  }

  /**
   * Reads a changed key to announce its grant and schedule its (new) expiry; announces the expiry at
   * once when it is already past.
   */
  private watchStored(keyId: string): void {
    this.deps.keys.findById(keyId).then((record) => {
      if (!record || record.deletedAt) return;
      if (record.expiresAt && record.expiresAt.getTime() <= this.now().getTime()) return this.deps.revocations.announce(keyId, 'expired');
      this.deps.grants?.announce(keyId, grantOf(record));
      this.watchExpiry(keyId, record.expiresAt);
    }, (err: unknown) => this.deps.onError?.(err));
  }

  /** One timer per key with an expiry: when it comes, the key is re-read and, still expired, announced. */
  private watchExpiry(keyId: string, expiresAt: Date | null): void {
    if (!expiresAt) return;
    const at = expiresAt.getTime();
    const existing = this.expiryTimers.get(keyId);
    if (existing?.at === at) return;
    if (existing) clearTimeout(existing.timer);
    if (this.expiryTimers.size >= (this.deps.cacheSize ?? 10_000) && !existing) return;
    const timer = setTimeout(() => {
      this.expiryTimers.delete(keyId);
      if (at > this.now().getTime()) return this.watchExpiry(keyId, expiresAt);
      this.forget(keyId);
      this.watchStored(keyId);
    }, Math.min(MAX_TIMER_MS, Math.max(0, at - this.now().getTime())));
    timer.unref();
    this.expiryTimers.set(keyId, { at, timer });
  }

  private remember(hash: string, entry: CachedKey): void {
    if (this.cache.size >= (this.deps.cacheSize ?? 10_000)) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, entry);
  }
}

/** The grant of a stored key: keys stored before issue 24 have every permission and no limit. */
export function grantOf(record: KeyRecord): KeyGrant {
  return {
    permissions: effectiveKeyPermissions(record.permissions),
    rateLimitPerMinute: record.rateLimitPerMinute ?? null,
    creditLimit: record.creditLimit ?? null,
    creditRefill: record.refill ?? null,
  };
}

function toCached(record: KeyRecord): CachedKey {
  const grant = grantOf(record);
  const principal: KeyPrincipal & KeyGrant = Object.freeze({ accountId: record.accountId, keyId: record.id, ...grant });
  return { keyId: record.id, accountId: record.accountId, grant, principal, expiresAt: record.expiresAt ?? null, version: record.updatedAt?.getTime() ?? 0 };
}
