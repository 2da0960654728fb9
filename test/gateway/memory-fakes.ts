import type { AuditEntry, AuditEntryInput, AuditStore } from '../../src/domain/audit/types.js';
import type { AccountRecord, AccountStore, ApplyResult } from '../../src/domain/credits/records.js';
import type { KeyChangeFeed, KeyChangeListener, KeyRecord, KeyStore } from '../../src/domain/keys/records.js';

let seq = 0;
const oid = () => (++seq).toString(16).padStart(24, '0');

/** AccountStore with the MongoDB store's semantics (guard, op ids), for domain tests. */
export class MemoryAccountStore implements AccountStore {
  readonly accounts = new Map<string, AccountRecord & { ops: string[] }>();
  applyCalls = 0;

  async create(name: string, credits: number, now: Date): Promise<AccountRecord> {
    const a = { id: oid(), name, credits, createdAt: now, ops: [] as string[] };
    this.accounts.set(a.id, a);
    return { id: a.id, name, credits, createdAt: now };
  }
  async find(id: string) {
    const a = this.accounts.get(id);
    return a ? { id: a.id, name: a.name, credits: a.credits, createdAt: a.createdAt } : null;
  }
  async isEmpty() {
    return this.accounts.size === 0;
  }
  async apply(id: string, delta: number, opId: string | null): Promise<ApplyResult> {
    this.applyCalls++;
    const a = this.accounts.get(id);
    if (!a) return { kind: 'unknown_account' };
    if (opId !== null && a.ops.includes(opId)) return { kind: 'already_applied', balance: a.credits };
    if (opId !== null && a.ops.includes(`void:${opId}`)) return { kind: 'voided', balance: a.credits };
    if (a.credits + delta < 0) return { kind: 'insufficient', balance: a.credits };
    a.credits += delta;
    if (opId !== null) a.ops = [...a.ops, opId].slice(-1000);
    return { kind: 'applied', balance: a.credits };
  }
  async settle(id: string, opId: string) {
    const a = this.accounts.get(id);
    if (a) a.ops = a.ops.filter((o) => o !== opId);
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
      keyId: e.keyId ?? null,
      keyPrefix: e.keyPrefix ?? null,
      amount: e.amount ?? null,
      opId: e.opId ?? null,
      details: e.details ?? null,
      createdAt: at,
    });
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

  async insert(k: Omit<KeyRecord, 'id' | 'lastUsedAt' | 'deletedAt'>): Promise<KeyRecord> {
    const rec = { ...k, id: oid(), lastUsedAt: null, deletedAt: null };
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
  change(keyId: string, deleted: boolean) {
    for (const l of this.listeners) l.changed(keyId, deleted);
  }
  lose() {
    this.live = false;
    for (const l of this.listeners) l.lost();
  }
}
