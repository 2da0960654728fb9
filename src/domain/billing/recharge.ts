import type { AuditStore } from '../audit/types.js';
import type { PurchaseFulfilment } from './fulfilment.js';
import type { BillingAccountStore, PaymentProvider, RechargeQueue } from './ports.js';
import type { Catalog } from './types.js';

/** `credits.recharge_failed` as the webhooks publish it. */
export interface RechargeFailedEvent {
  /** Derived from the trigger: every retry of one failure publishes one event. */
  triggerId: string;
  credits: number;
  amount: number;
  currency: string;
  reason: string;
  at: Date;
}

export interface AutoRechargeDeps {
  accounts: BillingAccountStore;
  queue: RechargeQueue;
  provider: Pick<PaymentProvider, 'chargeSavedCard'> | null;
  fulfilment: Pick<PurchaseFulfilment, 'fulfil'>;
  catalog: Catalog;
  audit: Pick<AuditStore, 'record'>;
  /** Publishes the webhook event `credits.recharge_failed` (idempotent by trigger id). */
  publishFailure: (accountId: string, event: RechargeFailedEvent) => Promise<void>;
  host: string;
  now?: () => Date;
}

/** `canceled`: auto-recharge was turned off before the recharge was sent to Stripe. */
export type RechargeOutcome = 'charged' | 'failed' | 'stale' | 'canceled';

/**
 * Automatic recharge, the workers' part (RechargeTrigger queued it): charges the saved card off-session
 * with the trigger's id as Stripe's idempotency key (a retry finds the same PaymentIntent) and grants
 * the pack through the same exactly-once fulfilment as `payment_intent.succeeded`; a decline turns
 * auto-recharge off, is audited and sends `credits.recharge_failed`. Turning auto-recharge off stops
 * a recharge not yet sent to Stripe (one guarded update decides which came first).
 */
export class AutoRecharge {
  private readonly now: () => Date;

  constructor(private readonly deps: AutoRechargeDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** The worker's part: charge the saved card for the chosen pack, then grant or give up. */
  async run(accountId: string, triggerId: string): Promise<RechargeOutcome> {
    const account = await this.deps.accounts.get(accountId);
    if (!account?.rechargeInFlight || account.rechargeInFlight.id !== triggerId) return 'stale';
    // The owner may turn automatic recharge off until this moment: then nothing is charged.
    if (!(await this.deps.accounts.markRechargeSent(accountId, triggerId, this.now()))) {
      await this.deps.accounts.cancelRecharge(accountId, triggerId);
      return 'canceled';
    }
    const { provider, catalog } = this.deps;
    const credits = account.rechargeInFlight.credits;
    const pack = catalog.packs.find((p) => p.credits === credits);
    const failure = { triggerId, credits, amount: pack?.price ?? 0, currency: catalog.currency };
    if (!provider || !pack) return this.fail(accountId, { ...failure, reason: 'the chosen pack is no longer on sale' });
    if (!account.customerId || !account.cardSaved) return this.fail(accountId, { ...failure, reason: 'no saved card' });
    const outcome = await provider.chargeSavedCard({ customerId: account.customerId, accountId, credits, amount: pack.price, currency: catalog.currency, triggerId });
    if (!outcome.ok) return this.fail(accountId, { ...failure, reason: outcome.reason });
    await this.deps.fulfilment.fulfil({
      id: outcome.paymentIntentId,
      kind: 'auto_recharge',
      accountId,
      credits,
      amount: pack.price,
      currency: catalog.currency,
      paymentIntentId: outcome.paymentIntentId,
      triggerId,
    });
    return 'charged';
  }

  /** Recharges whose queue entry or grant a crash lost, queued again (the idempotency key makes that safe). */
  async sweep(before: Date, limit = 100): Promise<number> {
    const stale = await this.deps.accounts.staleRecharges(before, limit);
    for (const r of stale) await this.deps.queue.enqueue(r.accountId, r.triggerId);
    return stale.length;
  }

  private async fail(accountId: string, failure: Omit<RechargeFailedEvent, 'at'>): Promise<'failed'> {
    const at = this.now();
    // Audit and event first (each once per trigger), the marker last: a crash in between is retried whole.
    const actor = { actor: 'worker', ip: null, host: this.deps.host };
    await this.deps.audit.record({ ...actor, event: 'credits.recharge_failed', accountId, amount: failure.credits, opId: failure.triggerId, details: { ...failure } }, at);
    await this.deps.publishFailure(accountId, { ...failure, at });
    await this.deps.accounts.failRecharge(accountId, failure.triggerId, failure.reason, at);
    return 'failed';
  }
}
