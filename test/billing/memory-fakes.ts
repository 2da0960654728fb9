import type { BillingAccountStore, PaymentProvider, PurchaseStore, RechargeQueue } from '../../src/domain/billing/ports.js';
import type { AutoRechargeSettings, BillingAccount, PaidPurchase, PurchaseRecord, PurchaseRefund } from '../../src/domain/billing/types.js';
import type { RechargeState } from '../../src/domain/credits/records.js';

/**
 * In-memory billing ports with the MongoDB stores' guard semantics (each method is one atomic step:
 * JavaScript runs it without interleaving), for the billing domain's tests without a database.
 */
export class MemoryPurchaseStore implements PurchaseStore {
  readonly docs = new Map<string, PurchaseRecord>();

  async record(purchase: PaidPurchase, at: Date): Promise<PurchaseRecord> {
    // The first report wins: a later one (even with other values) reads the stored record.
    if (!this.docs.has(purchase.id)) {
      this.docs.set(purchase.id, { ...purchase, triggerId: purchase.triggerId ?? null, state: 'pending', createdAt: at, grantedAt: null, refunds: [] });
    }
    return structuredClone(this.docs.get(purchase.id)!);
  }
  async open(purchase: PaidPurchase, at: Date) {
    if (!this.docs.has(purchase.id)) this.docs.set(purchase.id, { ...purchase, triggerId: null, state: 'open', createdAt: at, grantedAt: null, refunds: [] });
  }
  async find(id: string) {
    const doc = this.docs.get(id);
    return doc ? structuredClone(doc) : null;
  }
  async markPaid(id: string, paymentIntentId: string | null) {
    const doc = this.docs.get(id);
    if (doc?.state === 'open') Object.assign(doc, { state: 'pending', paymentIntentId });
    return doc ? structuredClone(doc) : null;
  }
  async findByPaymentIntent(paymentIntentId: string) {
    const doc = [...this.docs.values()].find((d) => d.paymentIntentId === paymentIntentId);
    return doc ? structuredClone(doc) : null;
  }
  async markGranted(id: string, at: Date) {
    const doc = this.docs.get(id);
    if (doc?.state === 'pending') Object.assign(doc, { state: 'granted', grantedAt: at });
  }
  async addRefund(id: string, refund: PurchaseRefund) {
    const doc = this.docs.get(id);
    if (doc && !doc.refunds.some((r) => r.id === refund.id)) doc.refunds.push({ ...refund });
  }
  async pending(before: Date, limit: number) {
    return [...this.docs.values()].filter((d) => d.state === 'pending' && d.createdAt < before).slice(0, limit).map((d) => structuredClone(d));
  }
  async listForAccount(accountId: string, limit: number) {
    return [...this.docs.values()]
      .filter((d) => d.accountId === accountId && d.state !== 'open')
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
      .slice(0, limit)
      .map((d) => structuredClone(d));
  }
}

interface BillingDoc {
  customerId: string | null;
  cardSaved: boolean;
  autoRecharge: AutoRechargeSettings | null;
  rechargeFailure: { at: Date; reason: string } | null;
  rechargeInFlight: { id: string; at: Date; credits?: number; sentAt?: Date } | null;
  rechargeCounts: Record<string, number>;
}

/** The billing fields of accounts (MongoBillingAccountStore's guards), keyed by account id. */
export class MemoryBillingAccountStore implements BillingAccountStore {
  readonly docs = new Map<string, BillingDoc>();

  private doc(accountId: string): BillingDoc {
    let doc = this.docs.get(accountId);
    if (!doc) {
      doc = { customerId: null, cardSaved: false, autoRecharge: null, rechargeFailure: null, rechargeInFlight: null, rechargeCounts: {} };
      this.docs.set(accountId, doc);
    }
    return doc;
  }

  /** What MongoAccountStore.apply reads along with a balance change: the threshold while a recharge may start. */
  rechargeStateOf(accountId: string): RechargeState {
    const doc = this.docs.get(accountId);
    return doc?.autoRecharge?.enabled && !doc.rechargeInFlight ? { threshold: doc.autoRecharge.threshold } : null;
  }

  async get(accountId: string): Promise<BillingAccount | null> {
    const doc = this.docs.get(accountId);
    if (!doc) return null;
    const { rechargeCounts: _counts, rechargeInFlight, ...rest } = structuredClone(doc);
    return { ...rest, rechargeInFlight: rechargeInFlight ? { id: rechargeInFlight.id, at: rechargeInFlight.at, credits: rechargeInFlight.credits ?? doc.autoRecharge?.credits ?? 0 } : null };
  }
  async setCustomerOnce(accountId: string, customerId: string) {
    const doc = this.doc(accountId);
    doc.customerId ??= customerId;
    return doc.customerId;
  }
  async markCardSaved(accountId: string) {
    this.doc(accountId).cardSaved = true;
  }
  async saveAutoRecharge(accountId: string, settings: AutoRechargeSettings) {
    const doc = this.doc(accountId);
    doc.autoRecharge = { ...settings };
    if (settings.enabled) doc.rechargeFailure = null;
  }
  async claimRecharge(accountId: string, balance: number, claim: { id: string; at: Date; day: string; maxPerDay: number }) {
    const doc = this.docs.get(accountId);
    if (!doc?.autoRecharge?.enabled || !(doc.autoRecharge.threshold > balance) || doc.rechargeInFlight) return null;
    if ((doc.rechargeCounts[claim.day] ?? 0) >= claim.maxPerDay) return null;
    doc.rechargeInFlight = { id: claim.id, at: claim.at, credits: doc.autoRecharge.credits };
    doc.rechargeCounts[claim.day] = (doc.rechargeCounts[claim.day] ?? 0) + 1;
    return { credits: doc.autoRecharge.credits };
  }
  async rechargesOn(accountId: string, day: string) {
    return this.docs.get(accountId)?.rechargeCounts[day] ?? 0;
  }
  async finishRecharge(accountId: string, triggerId: string) {
    const doc = this.docs.get(accountId);
    if (doc?.rechargeInFlight?.id === triggerId) doc.rechargeInFlight = null;
  }
  async markRechargeSent(accountId: string, triggerId: string, at: Date) {
    const marker = this.docs.get(accountId)?.rechargeInFlight;
    if (marker?.id !== triggerId) return false;
    if (marker.sentAt) return true;
    if (!this.docs.get(accountId)!.autoRecharge?.enabled) return false;
    marker.sentAt = at;
    return true;
  }
  async cancelRecharge(accountId: string, triggerId: string) {
    const doc = this.docs.get(accountId);
    if (doc?.rechargeInFlight?.id === triggerId && !doc.rechargeInFlight.sentAt) doc.rechargeInFlight = null;
  }
  async failRecharge(accountId: string, triggerId: string, reason: string, at: Date) {
    const doc = this.docs.get(accountId);
    if (doc?.rechargeInFlight?.id !== triggerId) return false;
    doc.rechargeInFlight = null;
    if (doc.autoRecharge) doc.autoRecharge.enabled = false;
    doc.rechargeFailure = { at, reason };
    return true;
  }
  async staleRecharges(before: Date, limit: number) {
    return [...this.docs.entries()]
      .filter(([, d]) => d.rechargeInFlight && d.rechargeInFlight.at < before)
      .slice(0, limit)
      .map(([accountId, d]) => ({ accountId, triggerId: d.rechargeInFlight!.id }));
  }
}

/** The recharge queue: what was enqueued, in order (the test plays the worker). */
export class MemoryRechargeQueue implements RechargeQueue {
  readonly entries: { accountId: string; triggerId: string }[] = [];
  async enqueue(accountId: string, triggerId: string) {
    this.entries.push({ accountId, triggerId });
  }
}

/**
 * Stripe as the domain sees it, in memory: customers, off-session PaymentIntents (one per idempotency
 * key, like Stripe's), a card that can be set to decline, refunds per charge.
 */
export class FakePayments implements PaymentProvider {
  card: 'succeed' | 'decline' = 'succeed';
  readonly customers: string[] = [];
  readonly sessions: { id: string; accountId: string; credits: number; amount: number; currency: string }[] = [];
  /** PaymentIntents by id, with the account they were made for (`metadata.account_id`); `offSession`: automatic recharge's. */
  readonly paymentIntents = new Map<string, { accountId: string; credits: number; amount: number; offSession: boolean; status: 'succeeded' | 'requires_payment_method' }>();
  private readonly byIdempotencyKey = new Map<string, string>();
  /** Refunds by charge id, with their creation time in seconds (Stripe lists newest first). */
  readonly refunds = new Map<string, { id: string; amount: number; created: number }[]>();
  private seq = 0;

  private id(prefix: string) {
    return `${prefix}_${(++this.seq).toString().padStart(6, '0')}`;
  }

  async createCustomer(_input: { accountId: string; name: string }, idempotencyKey: string) {
    const known = this.byIdempotencyKey.get(idempotencyKey);
    if (known) return known;
    const id = this.id('cus');
    this.byIdempotencyKey.set(idempotencyKey, id);
    this.customers.push(id);
    return id;
  }
  async createCheckoutSession(input: { customerId: string; accountId: string; credits: number; amount: number; currency: string }) {
    const id = this.id('cs');
    this.sessions.push({ id, accountId: input.accountId, credits: input.credits, amount: input.amount, currency: input.currency });
    return { id, url: `https://checkout.example/pay/${id}` };
  }
  async chargeSavedCard(input: { customerId: string; accountId: string; credits: number; amount: number; currency: string; triggerId: string }) {
    const known = this.byIdempotencyKey.get(input.triggerId);
    const id = known ?? this.id('pi');
    const earlier = known ? this.paymentIntents.get(known) : undefined;
    // As Stripe does: a key reused with other parameters is an error, not the earlier PaymentIntent.
    if (earlier && (earlier.credits !== input.credits || earlier.amount !== input.amount)) {
      throw new Error('Keys for idempotent requests can only be used with the same parameters they were first used with');
    }
    if (!known) {
      this.byIdempotencyKey.set(input.triggerId, id);
      this.paymentIntents.set(id, { accountId: input.accountId, credits: input.credits, amount: input.amount, offSession: true, status: this.card === 'succeed' ? 'succeeded' : 'requires_payment_method' });
    }
    return this.paymentIntents.get(id)!.status === 'succeeded' ? { ok: true as const, paymentIntentId: id } : { ok: false as const, reason: 'generic_decline', paymentIntentId: id };
  }
  /** A PaymentIntent made elsewhere (a Checkout's), so accountOfPaymentIntent knows it. */
  paymentIntentFor(accountId: string, credits: number, amount: number): string {
    const id = this.id('pi');
    this.paymentIntents.set(id, { accountId, credits, amount, offSession: false, status: 'succeeded' });
    return id;
  }
  /** Refunds `amount` of a charge, `created` seconds (default: after the charge's last refund). */
  refund(chargeId: string, amount: number, created?: number): string {
    const list = this.refunds.get(chargeId) ?? [];
    const id = this.id('re');
    list.unshift({ id, amount, created: created ?? (list[0]?.created ?? 1_700_000_000) + 1 });
    this.refunds.set(chargeId, list);
    return id;
  }
  async refundsOf(chargeId: string) {
    return (this.refunds.get(chargeId) ?? []).map((r) => ({ ...r }));
  }
  async accountOfPaymentIntent(paymentIntentId: string) {
    return this.paymentIntents.get(paymentIntentId)?.accountId ?? null;
  }
}

/** Makes `obj[method]` throw once, as a process dying at that point would leave things: the next call runs normally. */
export function crashOnce<T extends object, K extends keyof T>(obj: T, method: K): void {
  const original = obj[method] as unknown as (...args: unknown[]) => unknown;
  let crashed = false;
  (obj as Record<K, unknown>)[method] = function (this: unknown, ...args: unknown[]) {
    if (crashed) return original.apply(this, args);
    crashed = true;
    return Promise.reject(new Error(`crash before ${String(method)}`));
  };
}
