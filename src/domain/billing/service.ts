import { AppError, invalid } from '../errors.js';
import type { AuditActor, AuditStore } from '../audit/types.js';
import type { AccountRecord } from '../credits/records.js';
import type { BillingAccountStore, PaymentProvider, PurchaseStore } from './ports.js';
import { rechargeDay } from './trigger.js';
import type { AutoRechargeSettings, BillingAccount, Catalog, CreditPack, HistoryRow, PurchaseRecord } from './types.js';

export interface BillingServiceDeps {
  accounts: BillingAccountStore;
  /** The account's name and balance. */
  accountOf: (accountId: string) => Promise<AccountRecord | null>;
  purchases: Pick<PurchaseStore, 'listForAccount' | 'open'>;
  /** Grants and sign-up credits come from the audit trail; setting changes go to it. */
  audit: Pick<AuditStore, 'query' | 'record'>;
  /** Null: buying credits is not enabled on this server (no STRIPE_SECRET_KEY). */
  provider: Pick<PaymentProvider, 'createCustomer' | 'createCheckoutSession'> | null;
  catalog: Catalog;
  /** AUTO_RECHARGE_MAX_PER_DAY: the page says when today's are used up. */
  maxRechargesPerDay: number;
  now?: () => Date;
}

export interface BillingOverview {
  balance: number;
  /** False without STRIPE_SECRET_KEY: balance and history only. */
  buyingEnabled: boolean;
  catalog: Catalog;
  account: BillingAccount;
  history: HistoryRow[];
  /** AUTO_RECHARGE_MAX_PER_DAY: automatic recharges per account and UTC day, at most (0: none). */
  maxRechargesPerDay: number;
  /**
   * Automatic recharge is on but today's (UTC) `maxPerDay` recharges have run: a charge below the
   * threshold starts none until tomorrow. Null while that is not the case.
   */
  rechargeLimit: { maxPerDay: number } | null;
}

const HISTORY_ROWS = 100;
const EMPTY: BillingAccount = { customerId: null, cardSaved: false, autoRecharge: null, rechargeFailure: null, rechargeInFlight: null };

/** The Billing page's rules: what is on sale, starting a Checkout, the history, auto-recharge settings. */
export class BillingService {
  constructor(private readonly deps: BillingServiceDeps) {}

  get buyingEnabled(): boolean {
    return this.deps.provider !== null;
  }

  async overview(accountId: string): Promise<BillingOverview> {
    const today = rechargeDay(this.deps.now?.() ?? new Date());
    const [account, billing, history, rechargesToday] = await Promise.all([
      this.deps.accountOf(accountId),
      this.deps.accounts.get(accountId),
      this.history(accountId),
      this.deps.accounts.rechargesOn(accountId, today),
    ]);
    const maxPerDay = this.deps.maxRechargesPerDay;
    const limited = this.buyingEnabled && billing?.autoRecharge?.enabled === true && maxPerDay > 0 && rechargesToday >= maxPerDay;
    return {
      balance: account?.credits ?? 0,
      buyingEnabled: this.buyingEnabled,
      catalog: this.deps.catalog,
      account: billing ?? EMPTY,
      history,
      maxRechargesPerDay: maxPerDay,
      rechargeLimit: limited ? { maxPerDay } : null,
    };
  }

  /**
   * A Checkout Session for one pack: credits, amount and currency from the configuration (the form
   * only names the pack), on the account's one Stripe customer, recorded as the purchase its payment
   * grants. Returns the URL to send the browser to.
   */
  async startCheckout(accountId: string, packCredits: unknown, urls: { successUrl: string; cancelUrl: string }): Promise<string> {
    const { provider } = this.deps;
    if (!provider) throw new AppError('payments_disabled');
    const pack = this.packOf(packCredits);
    const customerId = await this.customerOf(accountId);
    const currency = this.deps.catalog.currency;
    const session = await provider.createCheckoutSession({ customerId, accountId, credits: pack.credits, amount: pack.price, currency, ...urls });
    // Lost if this process dies here: the payment is then granted by the catalog's pack of its price.
    await this.deps.purchases.open({ id: session.id, kind: 'checkout', accountId, credits: pack.credits, amount: pack.price, currency, paymentIntentId: null }, this.deps.now?.() ?? new Date());
    return session.url;
  }

  /** Saves the auto-recharge settings; turning it on needs a card saved by an earlier purchase. */
  async saveAutoRecharge(accountId: string, input: { enabled: unknown; threshold: unknown; credits: unknown }, actor: AuditActor): Promise<AutoRechargeSettings> {
    const enabled = input.enabled === true || input.enabled === 'on' || input.enabled === 'true';
    const threshold = typeof input.threshold === 'string' && /^\d{1,9}$/.test(input.threshold.trim()) ? Number(input.threshold) : input.threshold;
    if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 1) throw invalid('threshold', 'When the balance falls below must be a positive whole number');
    const pack = this.packOf(input.credits);
    if (enabled) {
      if (!this.deps.provider) throw new AppError('payments_disabled');
      if (this.deps.maxRechargesPerDay === 0) throw invalid('enabled', 'Automatic recharge is turned off on this server');
      const billing = await this.deps.accounts.get(accountId);
      if (!billing?.cardSaved) throw invalid('enabled', 'Automatic recharge needs a card saved by an earlier purchase: buy a pack first');
    }
    const settings = { enabled, threshold, credits: pack.credits };
    await this.deps.accounts.saveAutoRecharge(accountId, settings);
    await this.deps.audit.record({ ...actor, event: 'billing.auto_recharge_changed', accountId, details: { ...settings } }, this.deps.now?.() ?? new Date());
    return settings;
  }

  private packOf(value: unknown): CreditPack {
    const credits = typeof value === 'string' ? Number(value) : value;
    const pack = this.deps.catalog.packs.find((p) => p.credits === credits);
    if (!pack) throw invalid('pack', `pack must be one of ${this.deps.catalog.packs.map((p) => p.credits).join(', ')} credits`);
    return pack;
  }

  /** The account's customer, created once: concurrent first purchases share Stripe's idempotency key and one guarded update. */
  private async customerOf(accountId: string): Promise<string> {
    const known = await this.deps.accounts.get(accountId);
    if (known?.customerId) return known.customerId;
    const account = await this.deps.accountOf(accountId);
    if (!account) throw new AppError('not_signed_in');
    const created = await this.deps.provider!.createCustomer({ accountId, name: account.name }, `customer-${accountId}`);
    return (await this.deps.accounts.setCustomerOnce(accountId, created)) ?? created;
  }

  /** Purchases, operator grants and sign-up credits, newest first. */
  private async history(accountId: string): Promise<HistoryRow[]> {
    const purchases = (await this.deps.purchases.listForAccount(accountId, HISTORY_ROWS)).map(purchaseRow);
    const others: HistoryRow[] = [];
    for await (const e of this.deps.audit.query(accountId, { events: ['credits.granted', 'account.created'], limit: HISTORY_ROWS })) {
      if (!e.amount) continue;
      others.push({ at: e.createdAt, credits: e.amount, amount: null, status: e.event === 'account.created' ? 'Sign-up credits' : 'Granted by an operator' });
    }
    return [...purchases, ...others].sort((a, b) => b.at.getTime() - a.at.getTime()).slice(0, HISTORY_ROWS);
  }
}

function purchaseRow(p: PurchaseRecord): HistoryRow {
  const refunded = p.refunds.reduce((n, r) => n + r.amount, 0);
  const paid = p.kind === 'auto_recharge' ? 'Paid (automatic recharge)' : 'Paid';
  const status = p.state === 'pending' ? 'Processing' : refunded >= p.amount ? 'Refunded' : refunded > 0 ? 'Partly refunded' : paid;
  return { at: p.grantedAt ?? p.createdAt, credits: p.credits, amount: { value: p.amount, currency: p.currency }, status };
}
