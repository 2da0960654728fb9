import type { BillingAccount, AutoRechargeSettings, CheckoutPayment, PaidPurchase, PurchaseRecord, PurchaseRefund } from './types.js';

/** Stripe, as the domain calls it (src/providers/stripe implements it; tests run it against the stand-in). */
export interface PaymentProvider {
  /** Creates the account's customer; the key makes concurrent first purchases create one. */
  createCustomer(input: { accountId: string; name: string }, idempotencyKey: string): Promise<string>;
  createCheckoutSession(input: {
    customerId: string;
    accountId: string;
    credits: number;
    amount: number;
    currency: string;
    successUrl: string;
    cancelUrl: string;
  }): Promise<{ id: string; url: string }>;
  /**
   * Creates and confirms an off-session PaymentIntent on the customer's saved card, `triggerId` as
   * the idempotency key (a retry after a crash gets the same PaymentIntent). A decline is a value.
   */
  chargeSavedCard(input: {
    customerId: string;
    accountId: string;
    credits: number;
    amount: number;
    currency: string;
    triggerId: string;
  }): Promise<{ ok: true; paymentIntentId: string } | { ok: false; reason: string; paymentIntentId: string | null }>;
  /** The refunds of a charge (not failed or canceled), `created` in seconds since the epoch. */
  refundsOf(chargeId: string): Promise<{ id: string; amount: number; created: number }[]>;
  /** `metadata.account_id` of a PaymentIntent (null: not one of ours, or unknown). */
  accountOfPaymentIntent(paymentIntentId: string): Promise<string | null>;
}

/** A verified Stripe event, as the domain reads it. */
export type PaymentEvent =
  /** `checkout.session.completed` (paid) or `checkout.session.async_payment_succeeded`. */
  | { kind: 'checkout_paid'; payment: CheckoutPayment }
  /** `payment_intent.succeeded` of an automatic recharge. */
  | { kind: 'paid'; purchase: PaidPurchase }
  /** `charge.refunded`. */
  | { kind: 'refunded'; chargeId: string; paymentIntentId: string }
  /** Any other event (a Checkout's own `payment_intent.succeeded`, `charge.succeeded`, unpaid sessions, …). */
  | { kind: 'ignored'; type: string };

/** Purchases (collection `purchases`), one document per Checkout Session or auto-recharge PaymentIntent. */
export interface PurchaseStore {
  /** Inserts the purchase (`pending`) unless its id exists; returns the stored record either way. */
  record(purchase: PaidPurchase, at: Date): Promise<PurchaseRecord>;
  /** Records a Checkout Session as created (`open`): what it sells, before anyone pays. */
  open(purchase: PaidPurchase, at: Date): Promise<void>;
  find(id: string): Promise<PurchaseRecord | null>;
  /** open → pending with the payment's PaymentIntent (guarded); returns the record as it is then. */
  markPaid(id: string, paymentIntentId: string | null): Promise<PurchaseRecord | null>;
  findByPaymentIntent(paymentIntentId: string): Promise<PurchaseRecord | null>;
  /** pending → granted (guarded: a second call changes nothing). */
  markGranted(id: string, at: Date): Promise<void>;
  /** Records a refund on the purchase once (by refund id). */
  addRefund(id: string, refund: PurchaseRefund): Promise<void>;
  /** Purchases still pending, recorded before `before` (the sweep finishes them). */
  pending(before: Date, limit: number): Promise<PurchaseRecord[]>;
  /** The account's purchases, paid ones only (not `open`), newest first. */
  listForAccount(accountId: string, limit: number): Promise<PurchaseRecord[]>;
}

/** The billing fields of accounts: every change one guarded single-document update. */
export interface BillingAccountStore {
  get(accountId: string): Promise<BillingAccount | null>;
  /** Stores the customer id unless the account has one; returns the one stored (ours or the earlier). */
  setCustomerOnce(accountId: string, customerId: string): Promise<string | null>;
  markCardSaved(accountId: string): Promise<void>;
  /** Saves the settings (enabling clears a past failure). */
  saveAutoRecharge(accountId: string, settings: AutoRechargeSettings): Promise<void>;
  /**
   * The trigger: marks a recharge in flight when auto-recharge is on, `balance` is below its threshold,
   * none is in flight and fewer than `maxPerDay` ran on `day`; counts it. Null when another won or none is due.
   */
  claimRecharge(accountId: string, balance: number, claim: { id: string; at: Date; day: string; maxPerDay: number }): Promise<{ credits: number } | null>;
  /** How many automatic recharges were claimed on `day` (`YYYY-MM-DD`, UTC). */
  rechargesOn(accountId: string, day: string): Promise<number>;
  /** Clears the in-flight marker if it is still `triggerId`'s. */
  finishRecharge(accountId: string, triggerId: string): Promise<void>;
  /**
   * One guarded update: marks `triggerId`'s recharge as sent to Stripe, only while auto-recharge is on.
   * True when it may be sent: marked now, or marked by an earlier attempt (a retry sends it again
   * under the same idempotency key). False when auto-recharge was turned off before it was sent.
   */
  markRechargeSent(accountId: string, triggerId: string, at: Date): Promise<boolean>;
  /** Clears `triggerId`'s marker if the recharge was never sent to Stripe. */
  cancelRecharge(accountId: string, triggerId: string): Promise<void>;
  /** Clears `triggerId`'s marker, turns auto-recharge off and records why; false when the marker was not its. */
  failRecharge(accountId: string, triggerId: string, reason: string, at: Date): Promise<boolean>;
  /** Recharges in flight since before `before` (a lost queue entry or a lost webhook): the sweep retries them. */
  staleRecharges(before: Date, limit: number): Promise<{ accountId: string; triggerId: string }[]>;
}

/** Where the workers pick up a recharge (an Agenda job). */
export interface RechargeQueue {
  enqueue(accountId: string, triggerId: string): Promise<void>;
}
