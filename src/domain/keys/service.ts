import { AppError, invalid } from '../errors.js';
import type { KeyAuthenticator } from '../ports.js';
import type { KeyPrincipal } from '../principal.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { AccountStore } from '../credits/records.js';
import { RateLimiter } from './rate-limit.js';
import { displayPrefix, generateKey, hashKey, parseBearer } from './format.js';
import type { KeyChangeFeed, KeyRecord, KeyStore } from './records.js';

export interface KeyServiceDeps {
  keys: KeyStore;
  accounts: Pick<AccountStore, 'find'>;
  audit: AuditStore;
  /** Reports key changes from every instance; the cache is used only while it is live. */
  changes?: KeyChangeFeed;
  now?: () => Date;
  /** lastUsedAt is written at most this often per key (coalesced). */
  lastUsedIntervalMs?: number;
  /** Keys held in the cache at most (least recently used go first). */
  cacheSize?: number;
  /** Requests per minute per key on this instance; 0 or unset: unlimited. */
  rateLimitPerMinute?: number;
  /** Failures of the background lastUsedAt writes (they never fail a request). */
  onBackgroundError?: (err: unknown) => void;
}

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

interface CachedKey {
  keyId: string;
  accountId: string;
}

export const MAX_KEY_NAME_LENGTH = 100;
/** How often pending lastUsedAt values are looked at (each key is still written at most once per interval). */
const FLUSH_TICK_MS = 1000;

/**
 * API keys: creation (shown once), listing, soft deletion (audited) and authentication of every request.
 *
 * Revocation is immediate: a key is cached only while the change feed is live (a change stream on the
 * keys collection), every change event evicts, losing the feed drops the whole cache, and a local
 * delete evicts at once. Without a live feed every request reads the database.
 */
export class KeyService implements KeyAuthenticator {
  private readonly now: () => Date;
  private readonly cache = new Map<string, CachedKey>();
  /** Bumped by every change event: a database read older than the last event is not cached. */
  private epoch = 0;
  private readonly revokedListeners = new Set<(keyId: string) => void>();
  /** Recently announced revocations, so a local delete and its change event announce once. */
  private readonly announced = new Set<string>();
  private readonly lastWritten = new Map<string, number>();
  private readonly pendingUses = new Map<string, Date>();
  private flushTimer?: NodeJS.Timeout;
  private flushing?: Promise<void>;
  private readonly unsubscribe?: () => void;
  private readonly lastUsedIntervalMs: number;
  private readonly cacheSize: number;
  private readonly limiter: RateLimiter;

  constructor(private readonly deps: KeyServiceDeps) {
    this.now = deps.now ?? (() => new Date());
    this.lastUsedIntervalMs = deps.lastUsedIntervalMs ?? 60_000;
    this.cacheSize = deps.cacheSize ?? 10_000;
    this.limiter = new RateLimiter(deps.rateLimitPerMinute ?? 0);
    this.unsubscribe = deps.changes?.subscribe({
      changed: (keyId, deleted) => {
        this.epoch++;
        this.evict(keyId);
        if (deleted) this.announceRevoked(keyId);
      },
      lost: () => {
        this.epoch++;
        this.cache.clear();
      },
    });
  }

  async create(accountId: unknown, name: unknown, actor: AuditActor): Promise<CreatedKey> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    if (typeof name !== 'string' || name.trim() === '') throw invalid('name', 'name must be a non-empty string');
    if (name.trim().length > MAX_KEY_NAME_LENGTH) throw invalid('name', `name must be at most ${MAX_KEY_NAME_LENGTH} characters`);
    const key = generateKey();
    const createdAt = this.now();
    const record = await this.deps.keys.insert({
      accountId: account.id,
      name: name.trim(),
      hash: hashKey(key),
      prefix: displayPrefix(key),
      createdAt,
    });
    await this.deps.audit.record(
      { ...actor, event: 'key.created', accountId: account.id, keyId: record.id, keyPrefix: record.prefix, details: { name: record.name } },
      createdAt,
    );
    return { id: record.id, key, prefix: record.prefix, name: record.name, createdAt };
  }

  async list(accountId: unknown): Promise<KeySummary[]> {
    const account = typeof accountId === 'string' ? await this.deps.accounts.find(accountId) : null;
    if (!account) throw invalid('account', 'account must be the id of an existing account');
    const keys = await this.deps.keys.listForAccount(account.id);
    return keys.map(summary);
  }

  /** Soft-deletes a key (idempotent: deleting a deleted key returns its original deletion). */
  async delete(keyId: unknown, actor: AuditActor): Promise<{ id: string; deletedAt: Date }> {
    const id = typeof keyId === 'string' ? keyId.trim().toLowerCase() : '';
    const existing = /^[0-9a-f]{24}$/.test(id) ? await this.deps.keys.findById(id) : null;
    if (!existing) throw invalid('id', 'id must be the id of an existing key');
    if (existing.deletedAt) return { id, deletedAt: existing.deletedAt };
    const at = this.now();
    const after = await this.deps.keys.softDelete(id, at);
    if (!after?.deletedAt) throw invalid('id', 'id must be the id of an existing key');
    this.epoch++;
    this.evict(id);
    this.announceRevoked(id);
    if (after.deletedAt.getTime() === at.getTime()) {
      await this.deps.audit.record({ ...actor, event: 'key.deleted', accountId: after.accountId, keyId: id, keyPrefix: after.prefix, details: { name: after.name } }, at);
    }
    return { id, deletedAt: after.deletedAt };
  }

  /** The contract's 401s in order (header, format, unknown/deleted key); then the per-key rate limit (429). */
  async authenticate(authorization: string | undefined): Promise<KeyPrincipal> {
    const parsed = parseBearer(authorization);
    if (!parsed.ok) throw new AppError(parsed.reason);
    const hash = hashKey(parsed.key);
    const cached = this.cache.get(hash);
    if (cached) {
      if (this.deps.changes?.live) {
        this.limiter.take(cached.keyId);
        this.noteUse(cached.keyId);
        return { accountId: cached.accountId, keyId: cached.keyId };
      }
      this.cache.clear();
    }
    const epoch = this.epoch;
    const record = await this.deps.keys.findByHash(hash);
    if (!record || record.deletedAt) throw new AppError('invalid_api_key');
    // Cache only what no change event could have overtaken while we were reading.
    if (this.deps.changes?.live && epoch === this.epoch) this.remember(hash, { keyId: record.id, accountId: record.accountId });
    this.limiter.take(record.id);
    this.noteUse(record.id);
    return { accountId: record.accountId, keyId: record.id };
  }

  async isActive(keyId: string): Promise<boolean> {
    const record = /^[0-9a-f]{24}$/.test(keyId) ? await this.deps.keys.findById(keyId) : null;
    return Boolean(record && !record.deletedAt);
  }

  onRevoked(listener: (keyId: string) => void): () => void {
    this.revokedListeners.add(listener);
    return () => this.revokedListeners.delete(listener);
  }

  /** Number of keys cached now (tests and metrics). */
  get cachedKeys(): number {
    return this.cache.size;
  }

  /** Writes pending lastUsedAt values and stops the timer (shutdown). */
  async close(): Promise<void> {
    this.unsubscribe?.();
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.flushing;
    await this.flush(true);
  }

  /** Writes due lastUsedAt values now (tests; the timer does it otherwise). */
  async flushUses(): Promise<void> {
    await this.flushing;
    await this.flush(true);
  }

  private remember(hash: string, entry: CachedKey): void {
    if (this.cache.size >= this.cacheSize) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
    this.cache.set(hash, entry);
  }

  private evict(keyId: string): void {
    for (const [hash, entry] of this.cache) if (entry.keyId === keyId) this.cache.delete(hash);
  }

  private announceRevoked(keyId: string): void {
    if (this.announced.has(keyId)) return;
    this.announced.add(keyId);
    if (this.announced.size > 10_000) this.announced.delete(this.announced.values().next().value!);
    for (const listener of this.revokedListeners) {
      try {
        listener(keyId);
      } catch (err) {
        this.deps.onBackgroundError?.(err);
      }
    }
  }

  /**
   * Coalesces lastUsedAt: the latest use per key is kept in memory and written by a timer, at most once
   * per interval per key, never on the request's path.
   */
  private noteUse(keyId: string): void {
    this.pendingUses.set(keyId, this.now());
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flushing = this.flush(false).finally(() => (this.flushing = undefined));
    }, FLUSH_TICK_MS);
    this.flushTimer.unref();
  }

  private async flush(all: boolean): Promise<void> {
    const nowMs = Date.now();
    const due: { keyId: string; at: Date }[] = [];
    for (const [keyId, at] of this.pendingUses) {
      const last = this.lastWritten.get(keyId);
      if (all || last === undefined || nowMs - last >= this.lastUsedIntervalMs) {
        due.push({ keyId, at });
        this.pendingUses.delete(keyId);
        this.lastWritten.set(keyId, nowMs);
      }
    }
    for (const [keyId, last] of this.lastWritten) if (nowMs - last >= this.lastUsedIntervalMs && !this.pendingUses.has(keyId)) this.lastWritten.delete(keyId);
    if (due.length) {
      try {
        await this.deps.keys.recordUse(due);
      } catch (err) {
        this.deps.onBackgroundError?.(err);
      }
    }
    // Uses not yet due wait for a later tick.
    if (this.pendingUses.size && !all) this.scheduleFlush();
  }
}

function summary(k: KeyRecord): KeySummary {
  return { id: k.id, name: k.name, prefix: k.prefix, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, deletedAt: k.deletedAt };
}
