/** Buying credits: what is on sale, what was bought, and automatic recharge (issue 25). */

/** A pack on sale: `credits` for `price` in the currency's minor unit (cents). From CREDIT_PACKS. */
export interface CreditPack {
  credits: number;
  price: number;
}

export interface Catalog {
  packs: readonly CreditPack[];
  /** ISO code, lower case (`usd`). */
  currency: string;
}

/** How the credits were paid for: a Checkout Session in the console, or an automatic recharge. */
export type PurchaseKind = 'checkout' | 'auto_recharge';

/**
 * `open`: a Checkout Session the gateway created, not paid yet (what it sells is recorded then, so a
 * payment event never says how many credits it buys); `pending`: paid and recorded, the credits perhaps
 * not granted yet (the sweep finishes it); `granted`: done.
 */
export type PurchaseState = 'open' | 'pending' | 'granted';

/** What a paid Checkout Session or auto-recharge PaymentIntent says was bought. */
export interface PaidPurchase {
  /** The unique key: the Checkout Session id (`cs_…`) or the auto-recharge PaymentIntent id (`pi_…`). */
  id: string;
  kind: PurchaseKind;
  accountId: string;
  credits: number;
  /** Minor units. */
  amount: number;
  currency: string;
  paymentIntentId: string | null;
  /** The auto-recharge trigger that created the PaymentIntent (its idempotency key). */
  triggerId?: string | null;
}

/** What a paid Checkout event reports, read from Stripe's event: never how many credits it buys. */
export interface CheckoutPayment {
  sessionId: string;
  /** `metadata.account_id`, else `client_reference_id`. */
  accountId: string | null;
  /** `amount_total` and `currency` as paid (minor units, lower case). */
  amount: number | null;
  currency: string | null;
  paymentIntentId: string | null;
}

export interface PurchaseRefund {
  /** Stripe's refund id (`re_…`). */
  id: string;
  amount: number;
  /** Credits taken back for it. */
  credits: number;
  at: Date;
}

export interface PurchaseRecord extends PaidPurchase {
  state: PurchaseState;
  createdAt: Date;
  grantedAt: Date | null;
  refunds: PurchaseRefund[];
}

export interface AutoRechargeSettings {
  enabled: boolean;
  /** A charge that takes the balance below this starts a recharge. */
  threshold: number;
  /** The pack bought (its credits). */
  credits: number;
}

/** The billing state kept on the account document. */
export interface BillingAccount {
  /** One Stripe customer per account, created once. */
  customerId: string | null;
  /** A Checkout payment saved a card on the customer: automatic recharge may use it. */
  cardSaved: boolean;
  autoRecharge: AutoRechargeSettings | null;
  /** The last automatic recharge failed (and turned it off): shown on the Billing page. */
  rechargeFailure: { at: Date; reason: string } | null;
  /** The recharge in flight (one per account), until its credits are granted or it fails. */
  rechargeInFlight: { id: string; at: Date; credits: number } | null;
}

/** One row of the Billing page's purchase history. */
export interface HistoryRow {
  at: Date;
  credits: number;
  /** Minor units and currency; null for credits nobody paid for (grants, sign-up). */
  amount: { value: number; currency: string } | null;
  status: string;
}
