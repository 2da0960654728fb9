// BillingService (the Billing page's rules: what is on sale, starting a Checkout, the automatic recharge
// settings, the history) against in-memory fakes of its ports. Outcomes, not calls.
import { describe, expect, it } from 'vitest';
import { PurchaseFulfilment } from '../../src/domain/billing/fulfilment.js';
import { BillingService } from '../../src/domain/billing/service.js';
import type { Catalog } from '../../src/domain/billing/types.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { AppError } from '../../src/domain/errors.js';
import { MemoryAccountStore, MemoryAuditStore } from '../gateway/memory-fakes.js';
import { FakePayments, MemoryBillingAccountStore, MemoryPurchaseStore } from './memory-fakes.js';

const actor = { actor: 'test', ip: null, host: 'test' };
const catalog: Catalog = { packs: [{ credits: 100, price: 500 }, { credits: 1000, price: 4000 }], currency: 'eur' };
const urls = { successUrl: 'https://gateway.example/console/billing?checkout=success', cancelUrl: 'https://gateway.example/console/billing' };

async function setup(opts: { stripe?: boolean; maxPerDay?: number } = {}) {
  let now = new Date('2026-03-01T10:00:00Z');
  const clock = () => now;
  const accounts = new MemoryAccountStore();
  const audit = new MemoryAuditStore();
  const credits = new CreditService({ accounts, audit, host: 'test', now: clock });
  const billing = new MemoryBillingAccountStore();
  const purchases = new MemoryPurchaseStore();
  const provider = new FakePayments();
  const service = new BillingService({
    accounts: billing,
    accountOf: (id) => credits.getAccount(id),
    purchases,
    audit,
    provider: opts.stripe === false ? null : provider,
    catalog,
    maxRechargesPerDay: opts.maxPerDay ?? 3,
    now: clock,
  });
  const fulfilment = new PurchaseFulfilment({ purchases, accounts: billing, credits, provider, catalog, host: 'test', now: clock });
  const { id: accountId } = await credits.createAccount('billing', 25, actor);
  return {
    service,
    provider,
    billing,
    credits,
    fulfilment,
    audit,
    accountId,
    later(ms: number) {
      now = new Date(now.getTime() + ms);
    },
    /** Pays the Checkout Session the provider made last, as Stripe's event would report it. */
    async pay() {
      const session = provider.sessions.at(-1)!;
      await fulfilment.fulfil({ id: session.id, kind: 'checkout', accountId, credits: session.credits, amount: session.amount, currency: session.currency, paymentIntentId: provider.paymentIntentFor(accountId, session.credits, session.amount) });
    },
  };
}

const failure = (p: Promise<unknown>) => p.then(() => null, (err: unknown) => err as AppError);

describe('BillingService: buying a pack', () => {
  it('a Checkout takes credits, amount and currency from the catalog, for the pack the form names only', async () => {
    const s = await setup();
    const url = await s.service.startCheckout(s.accountId, '1000', urls);
    expect(url).toBe(`https://checkout.example/pay/${s.provider.sessions[0]!.id}`);
    expect(s.provider.sessions).toEqual([{ id: s.provider.sessions[0]!.id, accountId: s.accountId, credits: 1000, amount: 4000, currency: 'eur' }]);
  });

  it('a pack that is not on sale is invalid_request, and no Checkout is made', async () => {
    const s = await setup();
    for (const pack of ['50', 100.5, null, { credits: 100 }, '', 'all']) {
      const err = await failure(s.service.startCheckout(s.accountId, pack, urls));
      expect(err).toMatchObject({ code: 'invalid_request', field: 'pack', message: 'pack must be one of 100, 1000 credits' });
    }
    expect(s.provider.sessions).toHaveLength(0);
  });

  it('without Stripe buying is payments_disabled, and the page still shows balance and history', async () => {
    const s = await setup({ stripe: false });
    expect(await failure(s.service.startCheckout(s.accountId, '100', urls))).toMatchObject({ code: 'payments_disabled' });
    const overview = await s.service.overview(s.accountId);
    expect(overview).toMatchObject({ balance: 25, buyingEnabled: false });
    expect(overview.history).toEqual([expect.objectContaining({ credits: 25, amount: null, status: 'Sign-up credits' })]);
  });

  it('an account has one Stripe customer, even when its first purchases start at the same time', async () => {
    const s = await setup();
    await Promise.all(Array.from({ length: 5 }, () => s.service.startCheckout(s.accountId, '100', urls)));
    await s.service.startCheckout(s.accountId, '1000', urls);
    expect(s.provider.customers).toHaveLength(1);
    expect((await s.service.overview(s.accountId)).account.customerId).toBe(s.provider.customers[0]);
  });

  it('the history lists purchases, grants and sign-up credits, newest first, with refunds in the status', async () => {
    const s = await setup();
    await s.service.startCheckout(s.accountId, '100', urls);
    s.later(1_000);
    await s.pay();
    s.later(1_000);
    await s.credits.grant(s.accountId, 7, 'grant-1', actor);
    s.later(1_000);
    await s.service.startCheckout(s.accountId, '1000', urls);
    await s.pay();
    const intent = [...s.provider.paymentIntents.keys()].at(-1)!;
    s.provider.refund(`ch_${intent}`, 1000);
    await s.fulfilment.handle({ kind: 'refunded', chargeId: `ch_${intent}`, paymentIntentId: intent });
    const { history, balance } = await s.service.overview(s.accountId);
    expect(balance).toBe(25 + 100 + 7 + 1000 - 250);
    expect(history.map((r) => [r.credits, r.amount, r.status])).toEqual([
      [1000, { value: 4000, currency: 'eur' }, 'Partly refunded'],
      [7, null, 'Granted by an operator'],
      [100, { value: 500, currency: 'eur' }, 'Paid'],
      [25, null, 'Sign-up credits'],
    ]);
  });
});

describe('BillingService: automatic recharge settings', () => {
  it('turning it on needs a card saved by an earlier purchase', async () => {
    const s = await setup();
    const input = { enabled: 'on', threshold: '50', credits: '100' };
    const err = await failure(s.service.saveAutoRecharge(s.accountId, input, actor));
    expect(err).toMatchObject({ code: 'invalid_request', field: 'enabled' });
    expect((await s.service.overview(s.accountId)).account.autoRecharge).toBeNull();

    await s.service.startCheckout(s.accountId, '100', urls);
    await s.pay();
    expect(await s.service.saveAutoRecharge(s.accountId, input, actor)).toEqual({ enabled: true, threshold: 50, credits: 100 });
    expect((await s.service.overview(s.accountId)).account.autoRecharge).toEqual({ enabled: true, threshold: 50, credits: 100 });
    const changed = s.audit.entries.filter((e) => e.event === 'billing.auto_recharge_changed');
    expect(changed.map((e) => e.details)).toEqual([{ enabled: true, threshold: 50, credits: 100 }]);
  });

  it('a threshold that is not a positive whole number, or a pack not on sale, is invalid_request and saves nothing', async () => {
    const s = await setup();
    for (const threshold of ['0', '-5', '1.5', 'ten', '', '99999999999', null]) {
      const err = await failure(s.service.saveAutoRecharge(s.accountId, { enabled: undefined, threshold, credits: '100' }, actor));
      expect(err).toMatchObject({ code: 'invalid_request', field: 'threshold', message: 'When the balance falls below must be a positive whole number' });
    }
    expect(await failure(s.service.saveAutoRecharge(s.accountId, { enabled: undefined, threshold: '10', credits: '7' }, actor))).toMatchObject({ code: 'invalid_request', field: 'pack' });
    expect((await s.service.overview(s.accountId)).account.autoRecharge).toBeNull();
    expect(s.audit.entries.filter((e) => e.event === 'billing.auto_recharge_changed')).toHaveLength(0);
  });

  it('with AUTO_RECHARGE_MAX_PER_DAY=0 it cannot be turned on, and the page is told so', async () => {
    const s = await setup({ maxPerDay: 0 });
    await s.service.startCheckout(s.accountId, '100', urls);
    await s.pay();
    const err = await failure(s.service.saveAutoRecharge(s.accountId, { enabled: 'on', threshold: '50', credits: '100' }, actor));
    expect(err).toMatchObject({ code: 'invalid_request', field: 'enabled', message: 'Automatic recharge is turned off on this server' });
    const overview = await s.service.overview(s.accountId);
    expect(overview).toMatchObject({ maxRechargesPerDay: 0, rechargeLimit: null, account: { autoRecharge: null } });
  });

  it('turning it off needs no card, and turning it on again clears a past failure', async () => {
    const s = await setup();
    expect(await s.service.saveAutoRecharge(s.accountId, { enabled: undefined, threshold: '10', credits: '1000' }, actor)).toEqual({ enabled: false, threshold: 10, credits: 1000 });
    await s.service.startCheckout(s.accountId, '100', urls);
    await s.pay();
    await s.service.saveAutoRecharge(s.accountId, { enabled: true, threshold: 10, credits: 100 }, actor);
    const claimed = await s.billing.claimRecharge(s.accountId, 5, { id: 'rch_1', at: new Date(), day: '2026-03-01', maxPerDay: 3 });
    expect(claimed).toEqual({ credits: 100 });
    await s.billing.failRecharge(s.accountId, 'rch_1', 'generic_decline', new Date());
    expect((await s.service.overview(s.accountId)).account.rechargeFailure).toMatchObject({ reason: 'generic_decline' });
    await s.service.saveAutoRecharge(s.accountId, { enabled: 'true', threshold: '10', credits: '100' }, actor);
    expect((await s.service.overview(s.accountId)).account.rechargeFailure).toBeNull();
  });
});
