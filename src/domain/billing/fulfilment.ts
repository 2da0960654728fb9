import { AppError, UnreachableCaseError } from '../errors.js';
import type { AuditActor } from '../audit/types.js';
import type { CreditService } from '../credits/service.js';
import type { BillingAccountStore, PaymentEvent, PaymentProvider, PurchaseStore } from './ports.js';
import type { Catalog, CheckoutPayment, PaidPurchase, PurchaseRecord } from './types.js';

export interface FulfilmentDeps {
  purchases: PurchaseStore;
  accounts: Pick<BillingAccountStore, 'markCardSaved' | 'finishRecharge'>;
  credits: Pick<CreditService, 'purchase' | 'takeBack' | 'getAccount'>;
  /** Null when Stripe is not configured (nothing can then be refunded through it either). */
  provider: Pick<PaymentProvider, 'refundsOf' | 'accountOfPaymentIntent'> | null;
  /** What is on sale: a paid session with no record (the previous release's) buys the pack of its price. */
  catalog: Catalog;
  host: string;
  now?: () => Date;
}

export type FulfilmentOutcome = 'granted' | 'already_granted' | 'refunds_taken_back' | 'mismatch' | 'ignored';

/** The balance operation of a purchase: recorded on the account, so it applies once. */
export const purchaseOpId = (purchaseId: string) => `purchase:${purchaseId}`;
const refundOpId = (refundId: string) => `refund:${refundId}`;

/**
 * Turns verified payment events into credits, exactly once, without transactions. Three writes, each
 * safe to repeat, in an order where a crash between any two leaves something the next delivery (or the
 * sweep) finishes:
 *  1. the purchase record, unique by session or PaymentIntent id (`pending`);
 *  2. the balance change, keyed by the purchase (the account records its op id: a repeat is a no-op),
 *     with its `credits.purchased` audit entry (one per op id);
 *  3. the record's guarded `pending → granted`.
 * The answer to Stripe waits for all three, so a 2xx means the credits are durable.
 */
export class PurchaseFulfilment {
  private readonly now: () => Date;
  private readonly actor: AuditActor;

  constructor(private readonly deps: FulfilmentDeps) {
    this.now = deps.now ?? (() => new Date());
    this.actor = { actor: 'stripe', ip: null, host: deps.host };
  }

  async handle(event: PaymentEvent): Promise<FulfilmentOutcome> {
    switch (event.kind) {
      case 'checkout_paid':
        return this.checkoutPaid(event.payment);
      case 'paid':
        return this.rechargePaid(event.purchase);
      case 'refunded':
        return this.refunded(event.chargeId, event.paymentIntentId);
      case 'ignored':
        return 'ignored';
      default:
        throw new UnreachableCaseError(event);
    }
  }

  /**
   * Grants a paid purchase's credits once, however often and from wherever it is reported. A purchase
   * for an account this gateway does not have (another deployment on the same Stripe account) is
   * `ignored` and not recorded: nothing here could ever grant it.
   */
  async fulfil(paid: PaidPurchase): Promise<'granted' | 'already_granted' | 'ignored'> {
    if (!(await this.deps.credits.getAccount(paid.accountId))) return 'ignored';
    return this.grant(await this.deps.purchases.record(paid, this.now()), paid.paymentIntentId);
  }

  /**
   * A paid Checkout Session: grants what the gateway recorded when it created the session, never a
   * count the event carries. An event whose account, amount or currency disagrees with that record
   * grants nothing (`mismatch`: the door logs it and answers 2xx, since delivering it again changes
   * nothing).
   * A session with no record (created by the previous release, or a crash right after its creation)
   * buys the catalog's pack of the price paid, if there is one.
   */
  async checkoutPaid(payment: CheckoutPayment): Promise<FulfilmentOutcome> {
    const recorded = await this.deps.purchases.find(payment.sessionId);
    if (recorded) {
      const agrees = recorded.kind === 'checkout' && recorded.accountId === payment.accountId && recorded.amount === payment.amount && recorded.currency === payment.currency;
      return agrees ? this.grant(recorded, payment.paymentIntentId) : 'mismatch';
    }
    if (!payment.accountId || !(await this.deps.credits.getAccount(payment.accountId))) return 'ignored';
    const { catalog } = this.deps;
    const pack = payment.currency === catalog.currency ? catalog.packs.find((p) => p.price === payment.amount) : undefined;
    if (!pack) return 'mismatch';
    return this.fulfil({ id: payment.sessionId, kind: 'checkout', accountId: payment.accountId, credits: pack.credits, amount: pack.price, currency: catalog.currency, paymentIntentId: payment.paymentIntentId });
  }

  /** Grants a recorded purchase once: an open session becomes paid first. */
  /**
   * `payment_intent.succeeded` of an automatic recharge (usually granted by the worker already): its
   * credits and amount must be a pack on sale, or it grants nothing (`mismatch`).
   */
  private async rechargePaid(paid: PaidPurchase): Promise<FulfilmentOutcome> {
    const { catalog } = this.deps;
    const onSale = paid.currency === catalog.currency && catalog.packs.some((p) => p.credits === paid.credits && p.price === paid.amount);
    return onSale ? this.fulfil(paid) : 'mismatch';
  }

  private async grant(record: PurchaseRecord, paymentIntentId: string | null): Promise<'granted' | 'already_granted'> {
    const paid = record.state === 'open' ? await this.deps.purchases.markPaid(record.id, paymentIntentId) : record;
    if (!paid) throw new Error(`purchase ${record.id} vanished`);
    if (paid.state === 'granted') return 'already_granted';
    await this.finish(paid);
    return 'granted';
  }

  /**
   * Finishes purchases a crash left pending (recorded before `before`); returns how many. One that
   * cannot be finished (its account is not on this gateway) does not hold up the others: they are
   * finished first, then an AggregateError names the ones that failed.
   */
  async sweep(before: Date, limit = 100): Promise<number> {
    const pending = await this.deps.purchases.pending(before, limit);
    const failed: { id: string; err: unknown }[] = [];
    for (const record of pending) {
      await this.finish(record).catch((err: unknown) => failed.push({ id: record.id, err }));
    }
    if (failed.length > 0) {
      throw new AggregateError(failed.map((f) => f.err), `billing sweep: ${failed.length} pending purchase(s) could not be finished: ${failed.map((f) => f.id).join(', ')}`);
    }
    return pending.length;
  }

  private async finish(record: PurchaseRecord): Promise<void> {
    // The record's own values (the first report's), never a later event's: the grant cannot differ between retries.
    const details = { purchaseId: record.id, kind: record.kind, credits: record.credits, amount: record.amount, currency: record.currency };
    // The paid Checkout saved the card, whatever becomes of the grant.
    if (record.kind === 'checkout') await this.deps.accounts.markCardSaved(record.accountId);
    await this.deps.credits.purchase(record.accountId, record.credits, purchaseOpId(record.id), details, this.actor);
    await this.deps.purchases.markGranted(record.id, this.now());
    // The account's recharge slot is freed only once its credits are in.
    if (record.kind === 'auto_recharge' && record.triggerId) await this.deps.accounts.finishRecharge(record.accountId, record.triggerId);
  }

  /** `charge.refunded`: each refund of the charge takes back its share of the purchase's credits, once. */
  private async refunded(chargeId: string, paymentIntentId: string): Promise<FulfilmentOutcome> {
    const { provider } = this.deps;
    if (!provider) return 'ignored';
    const purchase = await this.deps.purchases.findByPaymentIntent(paymentIntentId);
    if (!purchase) {
      // One of ours whose payment event has not arrived yet: Stripe retries a non-2xx later.
      const owner = await provider.accountOfPaymentIntent(paymentIntentId);
      if (owner && (await this.deps.credits.getAccount(owner))) throw new AppError('purchase_not_recorded');
      return 'ignored';
    }
    // A refund of a purchase a crash left half-done: its credits are granted first, then taken back.
    if (purchase.state === 'pending') await this.finish(purchase);
    // Oldest first, each taking what brings the credits taken back to the rounded share of all refunded
    // so far (rounding each refund alone would drift: three thirds took back 99 of 100). Recorded refunds
    // count with what they took: a retry, on any instance, computes the same shares.
    const recorded = new Map(purchase.refunds.map((r) => [r.id, r.credits]));
    const refunds = (await provider.refundsOf(chargeId)).sort((a, b) => a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    let refundedAmount = 0;
    let takenBack = 0;
    for (const refund of refunds) {
      refundedAmount += refund.amount;
      const known = recorded.get(refund.id);
      if (known !== undefined) {
        takenBack += known;
        continue;
      }
      const credits = Math.max(0, refundShare(purchase, refundedAmount) - takenBack);
      takenBack += credits;
      if (credits === 0) continue;
      const details = { purchaseId: purchase.id, refundId: refund.id, amount: refund.amount, currency: purchase.currency, credits };
      await this.deps.credits.takeBack(purchase.accountId, credits, refundOpId(refund.id), details, this.actor);
      await this.deps.purchases.addRefund(purchase.id, { id: refund.id, amount: refund.amount, credits, at: this.now() });
    }
    return 'refunds_taken_back';
  }
}

/** The credits a refunded amount takes back: `round(credits × refunded / amount)`, never more than the purchase's. */
function refundShare(purchase: PurchaseRecord, refundedAmount: number): number {
  return Math.min(purchase.credits, Math.round((purchase.credits * refundedAmount) / purchase.amount));
}
