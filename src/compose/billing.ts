/**
 * The billing pieces every process builds alike (gateway, worker): stores, Stripe (when configured),
 * the exactly-once fulfilment, automatic recharge. Called only by the composition roots.
 */
import type { Connection } from 'mongoose';
import { creditPacks, type Config } from '../config.js';
import { MongoBillingAccountStore } from '../data/billing-accounts.js';
import { MongoPurchaseStore } from '../data/purchases.js';
import type { AuditStore } from '../domain/audit/types.js';
import { PurchaseFulfilment } from '../domain/billing/fulfilment.js';
import type { PaymentEvent, RechargeQueue } from '../domain/billing/ports.js';
import { AutoRecharge, type RechargeFailedEvent } from '../domain/billing/recharge.js';
import { BillingService } from '../domain/billing/service.js';
import type { Catalog } from '../domain/billing/types.js';
import type { CreditService } from '../domain/credits/service.js';
import { StripePayments, stripeClient, stripeEventVerifier } from '../providers/stripe/index.js';

export interface BillingModule {
  catalog: Catalog;
  service: BillingService;
  fulfilment: PurchaseFulfilment;
  autoRecharge: AutoRecharge;
  /** Null without STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET: the webhook route answers 404. */
  verify: ((rawBody: Buffer, signature: string | undefined) => PaymentEvent) | null;
}

export async function openBilling(deps: {
  config: Config;
  connection: Connection;
  credits: CreditService;
  audit: AuditStore;
  queue: RechargeQueue;
  publishRechargeFailed: (accountId: string, event: RechargeFailedEvent) => Promise<void>;
  host: string;
}): Promise<BillingModule> {
  const { config } = deps;
  const purchases = new MongoPurchaseStore(deps.connection);
  await purchases.init();
  const accounts = new MongoBillingAccountStore(deps.connection);
  const catalog: Catalog = { packs: creditPacks(config), currency: config.CREDIT_CURRENCY };
  const client = config.STRIPE_SECRET_KEY ? stripeClient({ secretKey: config.STRIPE_SECRET_KEY, apiBase: config.STRIPE_API_BASE }) : null;
  const provider = client ? new StripePayments(client) : null;
  const fulfilment = new PurchaseFulfilment({ purchases, accounts, credits: deps.credits, provider, host: deps.host });
  return {
    catalog,
    fulfilment,
    service: new BillingService({ accounts, accountOf: (id) => deps.credits.getAccount(id), purchases, audit: deps.audit, provider, catalog }),
    autoRecharge: new AutoRecharge({
      accounts,
      queue: deps.queue,
      provider,
      fulfilment,
      catalog,
      maxPerDay: config.AUTO_RECHARGE_MAX_PER_DAY,
      audit: deps.audit,
      publishFailure: deps.publishRechargeFailed,
      host: deps.host,
    }),
    verify: client && config.STRIPE_WEBHOOK_SECRET ? stripeEventVerifier(client, config.STRIPE_WEBHOOK_SECRET) : null,
  };
}
