// PurchaseFulfilment (Stripe's events → credits, exactly once, without transactions) against in-memory
// fakes of its ports: the real CreditService over MemoryAccountStore, MemoryPurchaseStore,
// MemoryBillingAccountStore and FakePayments. Outcomes (balances, audit entries, records), not calls.
// The end-to-end cases against the Stripe stand-in are in stripe-webhook.test.ts and crash.test.ts.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { PurchaseFulfilment } from '../../src/domain/billing/fulfilment.js';
import type { Catalog, PaidPurchase } from '../../src/domain/billing/types.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { AppError } from '../../src/domain/errors.js';
import { toPaymentEvent } from '../../src/providers/stripe/index.js';
import { MemoryAccountStore, MemoryAuditStore } from '../gateway/memory-fakes.js';
import { crashOnce, FakePayments, MemoryBillingAccountStore, MemoryPurchaseStore } from './memory-fakes.js';

const actor = { actor: 'test', ip: null, host: 'test' };
const catalog: Catalog = { packs: [{ credits: 100, price: 500 }, { credits: 1000, price: 4000 }], currency: 'usd' };

async function setup() {
  let now = new Date('2026-03-01T10:00:00Z');
  const clock = () => now;
  const accounts = new MemoryAccountStore();
  const audit = new MemoryAuditStore();
  const credits = new CreditService({ accounts, audit, host: 'test', now: clock });
  const purchases = new MemoryPurchaseStore();
  const billing = new MemoryBillingAccountStore();
  const provider = new FakePayments();
  const fulfilment = new PurchaseFulfilment({ purchases, accounts: billing, credits, provider, catalog, host: 'test', now: clock });
  const { id: accountId } = await credits.createAccount('buyer', 0, actor);
  let sessions = 0;
  return {
    accounts,
    audit,
    credits,
    purchases,
    billing,
    provider,
    fulfilment,
    accountId,
    /** Moves the clock on by `ms`. */
    later(ms: number) {
      now = new Date(now.getTime() + ms);
      return now;
    },
    now: clock,
    balance: async () => (await credits.getAccount(accountId))!.credits,
    entries: (event: string) => audit.entries.filter((e) => e.accountId === accountId && e.event === event),
    /** A paid Checkout Session of this account (its PaymentIntent known to the provider). */
    session(credits = 100, amount = 500): PaidPurchase {
      return { id: `cs_test_${++sessions}`, kind: 'checkout', accountId, credits, amount, currency: 'usd', paymentIntentId: provider.paymentIntentFor(accountId, credits, amount) };
    },
  };
}

/** `charge.refunded` for a purchase's charge (the charge id is derived from the PaymentIntent's). */
const chargeOf = (purchase: PaidPurchase) => `ch_of_${purchase.paymentIntentId}`;
const refunded = (purchase: PaidPurchase) => ({ kind: 'refunded' as const, chargeId: chargeOf(purchase), paymentIntentId: purchase.paymentIntentId! });

describe('fulfilment: a paid purchase is granted exactly once', () => {
  it('grants a paid session once however often it is delivered', async () => {
    const s = await setup();
    const paid = s.session();
    const outcomes = [];
    for (let i = 0; i < 3; i++) outcomes.push(await s.fulfilment.handle({ kind: 'paid', purchase: paid }));
    expect(outcomes).toEqual(['granted', 'already_granted', 'already_granted']);
    expect(await s.balance()).toBe(100);
    expect(s.entries('credits.purchased')).toHaveLength(1);
    expect(s.entries('credits.purchased')[0]).toMatchObject({ amount: 100, actor: 'stripe', details: { purchaseId: paid.id, credits: 100, amount: 500, currency: 'usd' } });
    expect(s.purchases.docs.get(paid.id)).toMatchObject({ state: 'granted', grantedAt: s.now() });
    // A paid Checkout saves the card for automatic recharge.
    expect((await s.billing.get(s.accountId))?.cardSaved).toBe(true);
  });

  it('grants once when several instances receive the same event at the same time', async () => {
    const s = await setup();
    const paid = s.session();
    await Promise.all(Array.from({ length: 5 }, () => s.fulfilment.handle({ kind: 'paid', purchase: paid })));
    expect(await s.balance()).toBe(100);
    expect(s.entries('credits.purchased')).toHaveLength(1);
  });

  it("grants the first report's credits, whatever a later report of the same session says", async () => {
    const s = await setup();
    const paid = s.session(100, 500);
    await s.fulfilment.fulfil(paid);
    expect(await s.fulfilment.fulfil({ ...paid, credits: 1000, amount: 4000 })).toBe('already_granted');
    expect(await s.balance()).toBe(100);
  });

  it('a paid session for an account this gateway does not have (another deployment on the same Stripe account) is ignored and records nothing', async () => {
    const s = await setup();
    for (const accountId of ['acct_elsewhere', '0123456789abcdef01234567']) {
      expect(await s.fulfilment.handle({ kind: 'paid', purchase: { ...s.session(), accountId } })).toBe('ignored');
    }
    expect(s.purchases.docs.size).toBe(0);
    expect(await s.fulfilment.sweep(s.later(61_000))).toBe(0);
  });

  it('grants two sessions of one account each once', async () => {
    const s = await setup();
    const [a, b] = [s.session(100, 500), s.session(1000, 4000)];
    for (const paid of [a, b, a, b]) await s.fulfilment.fulfil(paid);
    expect(await s.balance()).toBe(1100);
    expect(s.entries('credits.purchased').map((e) => e.amount).sort((x, y) => x! - y!)).toEqual([100, 1000]);
  });
});

describe("fulfilment: Stripe's events, in any order", () => {
  const sessionEvent = (type: string, paymentStatus: 'paid' | 'unpaid', accountId: string) =>
    ({
      id: `evt_${type}_${paymentStatus}`,
      type,
      data: { object: { id: 'cs_async_1', object: 'checkout.session', mode: 'payment', payment_status: paymentStatus, amount_total: 500, currency: 'usd', payment_intent: 'pi_async_1', metadata: { account_id: accountId, credits: '100' } } },
    }) as unknown as Stripe.Event;

  it('an async payment is granted by async_payment_succeeded, not by its unpaid completion, and once', async () => {
    const s = await setup();
    expect(await s.fulfilment.handle(toPaymentEvent(sessionEvent('checkout.session.completed', 'unpaid', s.accountId)))).toBe('ignored');
    expect(await s.balance()).toBe(0);
    expect(s.purchases.docs.size).toBe(0);
    expect(await s.fulfilment.handle(toPaymentEvent(sessionEvent('checkout.session.async_payment_succeeded', 'paid', s.accountId)))).toBe('granted');
    expect(await s.fulfilment.handle(toPaymentEvent(sessionEvent('checkout.session.async_payment_succeeded', 'paid', s.accountId)))).toBe('already_granted');
    expect(await s.balance()).toBe(100);
    expect(s.entries('credits.purchased')).toHaveLength(1);
  });

  it("a Checkout's own payment_intent.succeeded and charge.succeeded grant nothing, before or after its session", async () => {
    const s = await setup();
    const intent = { id: 'pi_checkout_1', object: 'payment_intent', amount: 500, amount_received: 500, currency: 'usd', metadata: {} };
    const charge = { id: 'ch_checkout_1', object: 'charge', payment_intent: 'pi_checkout_1', amount: 500, currency: 'usd' };
    const others = [
      { id: 'evt_pi', type: 'payment_intent.succeeded', data: { object: intent } },
      { id: 'evt_ch', type: 'charge.succeeded', data: { object: charge } },
    ] as unknown as Stripe.Event[];
    for (const e of others) expect(await s.fulfilment.handle(toPaymentEvent(e))).toBe('ignored');
    expect(await s.fulfilment.handle(toPaymentEvent(sessionEvent('checkout.session.completed', 'paid', s.accountId)))).toBe('granted');
    for (const e of others) expect(await s.fulfilment.handle(toPaymentEvent(e))).toBe('ignored');
    expect(await s.balance()).toBe(100);
  });
});

describe('fulfilment: refunds', () => {
  it('takes back the refunded share of the credits, once per refund however often charge.refunded comes', async () => {
    const s = await setup();
    const paid = s.session(100, 500);
    await s.fulfilment.fulfil(paid);
    s.provider.refund(chargeOf(paid), 125);
    expect(await s.fulfilment.handle(refunded(paid))).toBe('refunds_taken_back');
    expect(await s.fulfilment.handle(refunded(paid))).toBe('refunds_taken_back');
    expect(await s.balance()).toBe(75);
    // A second refund of the same charge: charge.refunded lists both, only the new one takes credits.
    const second = s.provider.refund(chargeOf(paid), 250);
    await s.fulfilment.handle(refunded(paid));
    await s.fulfilment.handle(refunded(paid));
    expect(await s.balance()).toBe(25);
    expect(s.entries('credits.payment_refunded').map((e) => e.amount)).toEqual([25, 50]);
    expect(s.entries('credits.payment_refunded')[1]).toMatchObject({ actor: 'stripe', details: { purchaseId: paid.id, refundId: second, amount: 250, currency: 'usd', credits: 50 } });
    expect(s.purchases.docs.get(paid.id)!.refunds.map((r) => r.credits)).toEqual([25, 50]);
  });

  it('rounds a share to the nearest credit', async () => {
    const s = await setup();
    const paid = s.session(100, 300);
    await s.fulfilment.fulfil(paid);
    s.provider.refund(chargeOf(paid), 100);
    await s.fulfilment.handle(refunded(paid));
    // 100 × 100 / 300 = 33.3
    expect(await s.balance()).toBe(67);
    s.provider.refund(chargeOf(paid), 50);
    await s.fulfilment.handle(refunded(paid));
    // 150 of 300 refunded: half the credits, 50, in all.
    expect(await s.balance()).toBe(50);
  });

  it('a purchase refunded in parts takes back exactly its credits, not one more or less', async () => {
    for (const { credits, amount, parts } of [
      { credits: 100, amount: 300, parts: [100, 100, 100] },
      { credits: 100, amount: 200, parts: [101, 99] },
      { credits: 3, amount: 500, parts: [250, 250] },
      { credits: 100, amount: 200, parts: Array<number>(200).fill(1) },
    ]) {
      const s = await setup();
      const paid = s.session(credits, amount);
      await s.fulfilment.fulfil(paid);
      let refundedSoFar = 0;
      for (const part of parts) {
        s.provider.refund(chargeOf(paid), part);
        await s.fulfilment.handle(refunded(paid));
        refundedSoFar += part;
        // At every step, the rounded share of all refunded so far.
        expect(credits - (await s.balance())).toBe(Math.round((credits * refundedSoFar) / amount));
      }
      expect({ credits, amount, parts: parts.length, balance: await s.balance() }).toEqual({ credits, amount, parts: parts.length, balance: 0 });
      expect(s.entries('credits.payment_refunded').reduce((n, e) => n + e.amount!, 0)).toBe(credits);
    }
  });

  it('refunds recorded by the previous release (each rounded alone) count with what they took: the last part takes the rest', async () => {
    const s = await setup();
    const paid = s.session(100, 300);
    await s.fulfilment.fulfil(paid);
    // Two thirds refunded under the old rule: 33 credits each, taken back and recorded.
    for (const part of [100, 100]) {
      const refundId = s.provider.refund(chargeOf(paid), part);
      await s.credits.takeBack(s.accountId, 33, `refund:${refundId}`, {}, actor);
      await s.purchases.addRefund(paid.id, { id: refundId, amount: part, credits: 33, at: s.now() });
    }
    s.provider.refund(chargeOf(paid), 100);
    await s.fulfilment.handle(refunded(paid));
    await s.fulfilment.handle(refunded(paid));
    expect(await s.balance()).toBe(0);
    expect(s.purchases.docs.get(paid.id)!.refunds.map((r) => r.credits)).toEqual([33, 33, 34]);
  });

  it('a refund after the credits were spent takes the balance below zero', async () => {
    const s = await setup();
    const paid = s.session(100, 500);
    await s.fulfilment.fulfil(paid);
    await s.credits.charge(s.accountId, 80, null);
    s.provider.refund(chargeOf(paid), 500);
    await s.fulfilment.handle(refunded(paid));
    expect(await s.balance()).toBe(-80);
  });

  it('a refund that arrives before its payment is purchase_not_recorded (409) and changes nothing; delivered again later it takes back', async () => {
    const s = await setup();
    const paid = s.session(100, 500);
    s.provider.refund(chargeOf(paid), 500);
    const early = await s.fulfilment.handle(refunded(paid)).catch((err: unknown) => err);
    expect(early).toBeInstanceOf(AppError);
    expect(early).toMatchObject({ code: 'purchase_not_recorded', spec: { httpStatus: 409 } });
    expect(await s.balance()).toBe(0);
    expect(s.purchases.docs.size).toBe(0);
    expect(s.entries('credits.payment_refunded')).toHaveLength(0);

    await s.fulfilment.fulfil(paid);
    await s.fulfilment.handle(refunded(paid));
    expect(await s.balance()).toBe(0);
    expect(s.entries('credits.purchased')).toHaveLength(1);
    expect(s.entries('credits.payment_refunded')).toHaveLength(1);
  });

  it('a refund of a payment that is not ours, or of an account this gateway does not have, is ignored', async () => {
    const s = await setup();
    expect(await s.fulfilment.handle({ kind: 'refunded', chargeId: 'ch_elsewhere', paymentIntentId: 'pi_elsewhere' })).toBe('ignored');
    const foreign = s.provider.paymentIntentFor('acct_elsewhere', 100, 500);
    s.provider.refund(`ch_${foreign}`, 500);
    expect(await s.fulfilment.handle({ kind: 'refunded', chargeId: `ch_${foreign}`, paymentIntentId: foreign })).toBe('ignored');
    expect(await s.balance()).toBe(0);
  });

  it('a refund of a purchase a crash left pending grants it first, then takes back', async () => {
    const s = await setup();
    const paid = s.session(100, 500);
    crashOnce(s.credits, 'purchase');
    await expect(s.fulfilment.fulfil(paid)).rejects.toThrow('crash');
    expect(s.purchases.docs.get(paid.id)!.state).toBe('pending');
    s.provider.refund(chargeOf(paid), 200);
    await s.fulfilment.handle(refunded(paid));
    expect(await s.balance()).toBe(60);
    expect(s.purchases.docs.get(paid.id)!.state).toBe('granted');
    expect(s.entries('credits.purchased')).toHaveLength(1);
  });
});

describe('fulfilment: a crash between two writes', () => {
  it('the sweep finishes a purchase recorded but not granted, once', async () => {
    const s = await setup();
    const paid = s.session();
    crashOnce(s.credits, 'purchase');
    await expect(s.fulfilment.fulfil(paid)).rejects.toThrow('crash');
    expect(await s.balance()).toBe(0);
    // Younger than the sweep's cut-off: left to Stripe's redelivery.
    expect(await s.fulfilment.sweep(s.now())).toBe(0);
    expect(await s.balance()).toBe(0);
    const cutOff = s.later(61_000);
    expect(await s.fulfilment.sweep(cutOff)).toBe(1);
    expect(await s.balance()).toBe(100);
    expect(s.purchases.docs.get(paid.id)!.state).toBe('granted');
    expect(await s.fulfilment.sweep(s.later(61_000))).toBe(0);
    // Stripe's late redelivery finds it done.
    expect(await s.fulfilment.fulfil(paid)).toBe('already_granted');
    expect(await s.balance()).toBe(100);
    expect(s.entries('credits.purchased')).toHaveLength(1);
  });

  it('a purchase the sweep cannot finish does not hold up the others: they are granted, and the failure is reported', async () => {
    const s = await setup();
    // Recorded by the previous release for an account this gateway does not have (its grant fails every time).
    await s.purchases.record({ ...s.session(), id: 'cs_foreign', accountId: 'acct_elsewhere' }, s.now());
    const paid = s.session();
    crashOnce(s.credits, 'purchase');
    await expect(s.fulfilment.fulfil(paid)).rejects.toThrow('crash');
    const swept = await s.fulfilment.sweep(s.later(61_000)).catch((err: unknown) => err);
    expect(swept).toBeInstanceOf(AggregateError);
    expect((swept as AggregateError).message).toContain('cs_foreign');
    expect(await s.balance()).toBe(100);
    expect(s.purchases.docs.get(paid.id)!.state).toBe('granted');
    expect(s.purchases.docs.get('cs_foreign')!.state).toBe('pending');
  });

  it('a crash after the balance change and before its audit entry: the redelivery writes the entry, not a second grant', async () => {
    const s = await setup();
    const paid = s.session();
    crashOnce(s.audit, 'record');
    await expect(s.fulfilment.fulfil(paid)).rejects.toThrow('crash');
    expect(await s.balance()).toBe(100);
    expect(s.entries('credits.purchased')).toHaveLength(0);
    await s.fulfilment.fulfil(paid);
    expect(await s.balance()).toBe(100);
    expect(s.entries('credits.purchased')).toHaveLength(1);
    expect(s.purchases.docs.get(paid.id)!.state).toBe('granted');
  });

  it('a crash before pending → granted: the sweep marks it granted without a second grant', async () => {
    const s = await setup();
    const paid = s.session();
    crashOnce(s.purchases, 'markGranted');
    await expect(s.fulfilment.fulfil(paid)).rejects.toThrow('crash');
    expect(await s.balance()).toBe(100);
    expect(s.purchases.docs.get(paid.id)!.state).toBe('pending');
    expect(await s.fulfilment.sweep(s.later(61_000))).toBe(1);
    expect(await s.balance()).toBe(100);
    expect(s.purchases.docs.get(paid.id)!.state).toBe('granted');
    expect(s.entries('credits.purchased')).toHaveLength(1);
  });
});
