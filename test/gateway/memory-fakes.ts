import type { AuditEntry, AuditEntryInput, AuditFilter, AuditStore } from '../../src/domain/audit/types.js';
import type { IdempotencyRecord, IdempotencyStore, StoredOutcome } from '../../src/domain/idempotency/service.js';
import type { AccountRecord, AccountStore, ApplyResult, RechargeState } from '../../src/domain/credits/records.js';
import type { KeyChangeFeed, KeyChangeListener, KeyRecord, KeyStore, NewKey } from '../../src/domain/keys/records.js';
import type { RateLimitCounter } from '../../src/domain/keys/rate-limit.js';
import { utcDay, type UsageCount, type UsageRow, type UsageStore } from '../../src/domain/usage/types.js';

let seq = 0;
const oid = () => (++seq).toString(16).padStart(24, '0');

/** Usage counters of one day, service and source, keyed `<day ms>|<service>|<source>`. */
export type MemoryUsage = Map<string, UsageRow>;

/** AccountStore with the MongoDB store's semantics (guard, op ids, usage counted with the change), for domain tests. */
export class MemoryAccountStore implements AccountStore {
  readonly accounts = new Map<string, AccountRecord & { ops: string[]; usage: MemoryUsage }>();
  applyCalls = 0;

  /** `recharge`: the account's automatic recharge state, read along with each change as the MongoDB store does. */
  constructor(private readonly readAlong: { recharge?: (accountId: string) => RechargeState } = {}) {}

  async create(name: string, credits: number, now: Date): Promise<AccountRecord> {
    const a = { id: oid(), name, credits, createdAt: now, ops: [] as string[], usage: new Map() as MemoryUsage };
    this.accounts.set(a.id, a);
    return { id: a.id, name, credits, createdAt: now };
  }
  async createWithId(id: string, name: string, now: Date) {
    const existing = await this.find(id);
    if (existing) return { account: existing, created: false };
    this.accounts.set(id, { id, name, credits: 0, createdAt: now, ops: [] as string[], usage: new Map() as MemoryUsage });
    return { account: { id, name, credits: 0, createdAt: now }, created: true };
  }
  async find(id: string) {
    const a = this.accounts.get(id);
    return a ? { id: a.id, name: a.name, credits: a.credits, createdAt: a.createdAt } : null;
  }
  async isEmpty() {
    return this.accounts.size === 0;
  }
  async apply(id: string, delta: number, opId: string | null, usage?: UsageCount, opts: { mayGoNegative?: boolean } = {}): Promise<ApplyResult> {
    this.applyCalls++;
    const a = this.accounts.get(id);
    if (!a) return { kind: 'unknown_account' };
    if (opId !== null && a.ops.includes(opId)) return { kind: 'already_applied', balance: a.credits };
    if (opId !== null && a.ops.includes(`void:${opId}`)) return { kind: 'voided', balance: a.credits };
    if (a.credits + delta < 0 && !opts.mayGoNegative) return { kind: 'insufficient', balance: a.credits };
    a.credits += delta;
    if (opId !== null) a.ops = [...a.ops, opId].slice(-1000);
    if (usage) {
      const day = utcDay(usage.at);
      const k = `${day.getTime()}|${usage.service}|${usage.source}`;
      const row = a.usage.get(k) ?? { day, service: usage.service, source: usage.source, calls: 0, credits: 0, refunded: 0 };
      if (delta < 0) {
        row.calls++;
        row.credits -= delta;
      } else {
        row.refunded += delta;
      }
      a.usage.set(k, row);
    }
    return { kind: 'applied', balance: a.credits, ...(this.readAlong.recharge && { recharge: this.readAlong.recharge(id) }) };
  }
  async settle(id: string, opId: string) {
    const a = this.accounts.get(id);
    if (a) a.ops = a.ops.filter((o) => o !== opId);
  }
  settleSoon(id: string, opId: string) {
    return this.settle(id, opId);
  }
  async voidOp(id: string, opId: string) {
    const a = this.accounts.get(id);
    if (!a) return 'unknown_account' as const;
    if (a.ops.includes(opId)) return 'already_applied' as const;
    if (!a.ops.includes(`void:${opId}`)) a.ops.push(`void:${opId}`);
    return 'voided' as const;
  }
  async balances(ids: readonly string[]) {
    return ids.map((id) => this.accounts.get(id)?.credits ?? null);
  }
}

/** UsageStore over a MemoryAccountStore's counters: rolled-up days move to `rows`. */
export class MemoryUsageStore implements UsageStore {
  readonly rows = new Map<string, MemoryUsage>();
  rollUps: { accountId: string; before: Date }[] = [];

  constructor(private readonly accounts: MemoryAccountStore) {}

  async rollUp(accountId: string, before: Date): Promise<void> {
    this.rollUps.push({ accountId, before });
    const a = this.accounts.accounts.get(accountId);
    if (!a) return;
    const rows = this.rows.get(accountId) ?? new Map<string, UsageRow>();
    for (const [k, row] of a.usage) {
      if (row.day >= before) continue;
      rows.set(k, { ...row });
      a.usage.delete(k);
    }
    this.rows.set(accountId, rows);
  }
  async rollUpStale(before: Date, limit: number): Promise<number> {
    const stale = [...this.accounts.accounts.values()].filter((a) => [...a.usage.values()].some((r) => r.day < before)).slice(0, limit);
    for (const a of stale) await this.rollUp(a.id, before);
    return stale.length;
  }
  async read(accountId: string, from: Date, to: Date): Promise<UsageRow[] | null> {
    const a = this.accounts.accounts.get(accountId);
    if (!a) return null;
    const merged = new Map([...(this.rows.get(accountId) ?? []), ...a.usage]);
    return [...merged.values()].filter((r) => r.day >= from && r.day <= to).map((r) => ({ ...r }));
  }
}

export class MemoryAuditStore implements AuditStore {
  readonly entries: AuditEntry[] = [];
  async record(e: AuditEntryInput, at: Date): Promise<void> {
    if (e.opId && this.entries.some((x) => x.event === e.event && x.accountId === e.accountId && x.opId === e.opId)) return;
    this.entries.push({
      id: oid(),
      event: e.event,
      accountId: e.accountId,
      actor: e.actor,
      ip: e.ip,
      host: e.host,
      userAgent: e.userAgent ?? null,
      keyId: e.keyId ?? null,
      keyPrefix: e.keyPrefix ?? null,
      amount: e.amount ?? null,
      opId: e.opId ?? null,
      details: e.details ?? null,
      createdAt: at,
    });
  }
  async *query(accountId: string, filter: AuditFilter) {
    const hits = this.entries.filter(
      (e) =>
        e.accountId === accountId &&
        (!filter.events?.length || filter.events.includes(e.event)) &&
        (!filter.from || e.createdAt >= filter.from) &&
        (!filter.to || e.createdAt < filter.to),
    );
    yield* hits.reverse().slice(0, filter.limit || undefined);
  }

  async *listForAccount(accountId: string) {
    yield* this.entries.filter((e) => e.accountId === accountId);
  }
}

export class MemoryKeyStore implements KeyStore {
  readonly keys = new Map<string, KeyRecord>();
  reads = 0;
  useWrites: { keyId: string; at: Date }[][] = [];
  /** Runs between the read and its answer (to simulate a change racing a read). */
  duringRead?: () => void;

  async insert(k: NewKey): Promise<KeyRecord> {
    const limit = k.creditLimit ?? null;
    const rec: KeyRecord = {
      ...k,
      id: oid(),
      lastUsedAt: null,
      deletedAt: null,
      updatedAt: k.createdAt,
      expiresAt: k.expiresAt ?? null,
      creditLimit: limit,
      creditsLeft: limit,
      refill: limit === null ? null : (k.refill ?? null),
      refilledFor: null,
      rateLimitPerMinute: k.rateLimitPerMinute ?? null,
      permissions: k.permissions ?? null,
      rolledFrom: k.rolledFrom ?? null,
      expiringNotifiedAt: null,
    };
    this.keys.set(rec.id, rec);
    return { ...rec };
  }
  async findByHash(hash: string) {
    this.reads++;
    const found = [...this.keys.values()].find((k) => k.hash === hash);
    const copy = found ? { ...found } : null;
    this.duringRead?.();
    return copy;
  }
  async findById(id: string) {
    const k = this.keys.get(id);
    return k ? { ...k } : null;
  }
  async listForAccount(accountId: string) {
    return [...this.keys.values()].filter((k) => k.accountId === accountId);
  }
  async softDelete(id: string, at: Date) {
    const k = this.keys.get(id);
    if (!k) return null;
    k.deletedAt ??= at;
    return { ...k };
  }
  async updateSettings(id: string, expected: Pick<KeyRecord, 'expiresAt' | 'creditLimit' | 'creditsLeft'>, change: Partial<KeyRecord>, at: Date) {
    const k = this.keys.get(id);
    const same = (a: Date | null, b: Date | null) => (a?.getTime() ?? null) === (b?.getTime() ?? null);
    if (!k || k.deletedAt || !same(k.expiresAt, expected.expiresAt) || k.creditLimit !== expected.creditLimit || k.creditsLeft !== expected.creditsLeft) return null;
    for (const [field, value] of Object.entries(change)) if (value !== undefined) (k as unknown as Record<string, unknown>)[field] = value;
    if (change.expiresAt !== undefined && !same(change.expiresAt, expected.expiresAt)) k.expiringNotifiedAt = null;
    k.updatedAt = at;
    return { ...k };
  }
  async expireBy(id: string, at: Date, now: Date) {
    const k = this.keys.get(id);
    if (!k) return null;
    if (!k.deletedAt && (!k.expiresAt || k.expiresAt > at)) Object.assign(k, { expiresAt: at, updatedAt: now, expiringNotifiedAt: null });
    return { ...k };
  }
  async recordUse(uses: readonly { keyId: string; at: Date }[]) {
    this.useWrites.push([...uses]);
    for (const u of uses) {
      const k = this.keys.get(u.keyId);
      if (k && (!k.lastUsedAt || k.lastUsedAt < u.at)) k.lastUsedAt = u.at;
    }
  }
}

/** A change feed the test drives: live or not, change events, loss. */
export class ManualKeyFeed implements KeyChangeFeed {
  live = true;
  private readonly listeners = new Set<KeyChangeListener>();
  subscribe(l: KeyChangeListener) {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  /** `version`: the key's updatedAt (ms) after the change, as the MongoDB feed reports it. */
  change(keyId: string, deleted: boolean, version?: number) {
    for (const l of this.listeners) l.changed(keyId, deleted, version);
  }
  lose() {
    this.live = false;
    for (const l of this.listeners) l.lost();
  }
}

/** IdempotencyStore in memory, with the MongoDB store's semantics. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  readonly records = new Map<string, IdempotencyRecord>();
  async claim(record: IdempotencyRecord) {
    const existing = this.records.get(record.id);
    if (existing) return structuredClone(existing);
    this.records.set(record.id, structuredClone(record));
    return null;
  }
  async takeOver(id: string, now: Date, lockedUntil: Date) {
    const r = this.records.get(id);
    if (!r || r.state !== 'running' || r.lockedUntil > now) return false;
    r.lockedUntil = lockedUntil;
    return true;
  }
  async complete(id: string, outcome: StoredOutcome) {
    const r = this.records.get(id);
    if (r) Object.assign(r, { state: 'done', outcome: structuredClone(outcome) });
  }
  async unlock(id: string, now: Date) {
    const r = this.records.get(id);
    if (r?.state === 'running') r.lockedUntil = now;
  }
}

/** RateLimitCounter with the MongoDB counter's semantics (guarded add, a refusal adds nothing). */
export class MemoryRateLimitCounter implements RateLimitCounter {
  readonly counts = new Map<string, { n: number; expiresAt: Date }>();

  async add(keyId: string, windowStart: Date, cost: number, limit: number, expiresAt: Date) {
    const id = `${keyId}:${windowStart.getTime()}`;
    const n = this.counts.get(id)?.n ?? 0;
    if (n + cost > limit) return { accepted: false, count: n };
    this.counts.set(id, { n: n + cost, expiresAt });
    return { accepted: true, count: n + cost };
  }
}
