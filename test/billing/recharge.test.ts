// Automatic recharge's domain (RechargeTrigger in the charge, AutoRecharge in the worker, the Billing
// page's BillingService) against in-memory fakes of its ports: the real CreditService over
// MemoryAccountStore (which reads the recharge state along with each change, as MongoDB's does),
// MemoryBillingAccountStore, MemoryRechargeQueue (the test plays the worker) and FakePayments.
// Outcomes (balances, PaymentIntents, the account's billing state, events, audit), not calls.
// End to end against the Stripe stand-in: auto-recharge.test.ts and recharge-daily-cap.test.ts.
import type Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import { PurchaseFulfilment } from '../../src/domain/billing/fulfilment.js';
import { AutoRecharge, type RechargeFailedEvent } from '../../src/domain/billing/recharge.js';
import { BillingService } from '../../src/domain/billing/service.js';
import { RechargeTrigger } from '../../src/domain/billing/trigger.js';
import type { Catalog } from '../../src/domain/billing/types.js';
import { CreditService } from '../../src/domain/credits/service.js';
import { toPaymentEvent } from '../../src/providers/stripe/index.js';
import { MemoryAccountStore, MemoryAuditStore } from '../gateway/memory-fakes.js';
import { crashOnce, FakePayments, MemoryBillingAccountStore, MemoryPurchaseStore, MemoryRechargeQueue } from './memory-fakes.js';

const actor = { actor: 'test', ip: null, host: 'test' };
const catalog: Catalog = { packs: [{ credits: 100, price: 500 }, { credits: 1000, price: 4000 }], currency: 'usd' };
const HOUR = 3_600_000;

/**
 * An account that bought 100 credits through Checkout (card saved) on top of `credits`, with automatic
 * recharge of the 100 pack below `threshold`.
 */
async function setup(opts: { credits?: number; threshold?: number; maxPerDay?: number; enabled?: boolean } = {}) {
  let now = new Date('2026-03-01T10:00:00Z');
  const clock = () => now;
  const billing = new MemoryBillingAccountStore();
  const accounts = new MemoryAccountStore({ recharge: (id) => billing.rechargeStateOf(id) });
  const audit = new MemoryAuditStore();
  const queue = new MemoryRechargeQueue();
  const maxPerDay = opts.maxPerDay ?? 3;
  const trigger = new RechargeTrigger({ accounts: billing, queue, enabled: opts.enabled ?? true, maxPerDay, now: clock });
  const credits = new CreditService({ accounts, audit, host: 'test', now: clock, onBalanceChanged: (id, balance, _low, recharge) => trigger.observe(id, balance, recharge) });
  const purchases = new MemoryPurchaseStore();
  const provider = new FakePayments();
  const fulfilment = new PurchaseFulfilment({ purchases, accounts: billing, credits, provider, catalog, host: 'test', now: clock });
  // The webhook publisher's contract: one event per trigger id, however often it is published.
  const published = new Map<string, { accountId: string; event: RechargeFailedEvent }>();
  const autoRecharge = new AutoRecharge({
    accounts: billing,
    queue,
    provider,
    fulfilment,
    catalog,
    audit,
    publishFailure: async (accountId, event) => void (published.has(event.triggerId) || published.set(event.triggerId, { accountId, event })),
    host: 'test',
    now: clock,
  });
  const service = new BillingService({ accounts: billing, accountOf: (id) => credits.getAccount(id), purchases, audit, provider, catalog, maxRechargesPerDay: maxPerDay, now: clock });

  const { id: accountId } = await credits.createAccount('recharged', opts.credits ?? 30, actor);
  await service.startCheckout(accountId, '100', { successUrl: 'https://gateway.example/ok', cancelUrl: 'https://gateway.example/back' });
  await fulfilment.fulfil({ id: provider.sessions[0]!.id, kind: 'checkout', accountId, credits: 100, amount: 500, currency: 'usd', paymentIntentId: provider.paymentIntentFor(accountId, 100, 500) });
  const settings = { enabled: 'on', threshold: String(opts.threshold ?? 120), credits: '100' };
  // With a cap of 0 the service refuses to turn it on: settings saved before the operator set it.
  if (maxPerDay === 0) await billing.saveAutoRecharge(accountId, { enabled: true, threshold: opts.threshold ?? 120, credits: 100 });
  else await service.saveAutoRecharge(accountId, settings, actor);
  let ops = 0;

  return {
    billing,
    audit,
    queue,
    provider,
    fulfilment,
    autoRecharge,
    service,
    published,
    accountId,
    now: clock,
    later(ms: number) {
      now = new Date(now.getTime() + ms);
      return now;
    },
    credits,
    balance: async () => (await credits.getAccount(accountId))!.credits,
    charge: (amount: number) => credits.charge(accountId, amount, `op-${++ops}`),
    /** The account's automatic recharge PaymentIntents at Stripe. */
    intents: () => [...provider.paymentIntents.entries()].filter(([, pi]) => pi.accountId === accountId && pi.offSession),
    inFlight: async () => (await billing.get(accountId))!.rechargeInFlight,
    entries: (event: string) => audit.entries.filter((e) => e.accountId === accountId && e.event === event),
    /** Runs every queued recharge as the workers do; returns their outcomes. */
    async work() {
      const outcomes = [];
      for (const entry of queue.entries.splice(0)) outcomes.push(await autoRecharge.run(entry.accountId, entry.triggerId));
      return outcomes;
    },
  };
}

describe('auto-recharge trigger: once per threshold crossing, one in flight', () => {
  it('a charge that takes the balance below the threshold queues one recharge; the worker grants the pack and frees the slot', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    expect(await s.charge(5)).toBe(125);
    expect(s.queue.entries).toHaveLength(0);
    expect(await s.charge(10)).toBe(115);
    expect(s.queue.entries).toHaveLength(1);
    // Still below while it is in flight: nothing more is queued.
    await s.charge(5);
    await s.charge(5);
    expect(s.queue.entries).toHaveLength(1);
    expect((await s.inFlight())?.id).toBe(s.queue.entries[0]!.triggerId);

    s.later(60_000);
    expect(await s.work()).toEqual(['charged']);
    expect(await s.balance()).toBe(205);
    expect(await s.inFlight()).toBeNull();
    expect(s.intents()).toHaveLength(1);
    expect(s.intents()[0]![1]).toMatchObject({ credits: 100, amount: 500, status: 'succeeded' });
    const purchased = s.entries('credits.purchased').filter((e) => e.details?.kind === 'auto_recharge');
    expect(purchased).toHaveLength(1);
    expect(purchased[0]).toMatchObject({ amount: 100, details: { credits: 100, amount: 500, currency: 'usd' } });
    expect((await s.service.overview(s.accountId)).history[0]).toMatchObject({ credits: 100, status: 'Paid (automatic recharge)' });
  });

  it('twenty concurrent charges crossing the threshold queue one recharge', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await Promise.all(Array.from({ length: 20 }, () => s.charge(1)));
    expect(await s.balance()).toBe(110);
    expect(s.queue.entries).toHaveLength(1);
    await s.work();
    expect(s.intents()).toHaveLength(1);
    expect(await s.balance()).toBe(210);
  });

  it('a new crossing after the recharge queues a new one; charges that stay above queue none', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    await s.work();
    expect(await s.balance()).toBe(210);
    await s.charge(50);
    await s.charge(40);
    expect(await s.balance()).toBe(120);
    expect(s.queue.entries).toHaveLength(0);
    await s.charge(1);
    expect(s.queue.entries).toHaveLength(1);
    await s.work();
    expect(s.intents()).toHaveLength(2);
    expect(await s.balance()).toBe(219);
  });

  it('a grant of the recharge by the worker and by payment_intent.succeeded, in either order, is one grant', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    // The worker charges the card, then dies before granting; Stripe's event comes first.
    crashOnce(s.fulfilment, 'fulfil');
    const [entry] = s.queue.entries.splice(0);
    await expect(s.autoRecharge.run(entry!.accountId, entry!.triggerId)).rejects.toThrow('crash');
    const [[intentId, intent]] = s.intents();
    const succeeded = {
      id: 'evt_pi_succeeded',
      type: 'payment_intent.succeeded',
      data: { object: { id: intentId, object: 'payment_intent', amount: intent!.amount, amount_received: intent!.amount, currency: 'usd', metadata: { account_id: s.accountId, credits: '100', purpose: 'auto_recharge', trigger_id: entry!.triggerId } } },
    } as unknown as Stripe.Event;
    expect(await s.fulfilment.handle(toPaymentEvent(succeeded))).toBe('granted');
    expect(await s.inFlight()).toBeNull();
    // The queue's retry finds the slot freed: no second PaymentIntent, no second grant.
    expect(await s.autoRecharge.run(entry!.accountId, entry!.triggerId)).toBe('stale');
    expect(await s.fulfilment.handle(toPaymentEvent(succeeded))).toBe('already_granted');
    expect(s.intents()).toHaveLength(1);
    expect(await s.balance()).toBe(210);
  });

  it("a payment_intent.succeeded whose credits or amount are no pack on sale grants nothing (mismatch)", async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    const before = await s.balance();
    for (const [credits, amount] of [['100000', 500], ['100', 1]] as const) {
      const event = {
        id: `evt_pi_forged_${credits}_${amount}`,
        type: 'payment_intent.succeeded',
        data: { object: { id: `pi_forged_${credits}_${amount}`, object: 'payment_intent', amount, amount_received: amount, currency: 'usd', metadata: { account_id: s.accountId, credits, purpose: 'auto_recharge', trigger_id: 'rch_forged' } } },
      } as unknown as Stripe.Event;
      expect(await s.fulfilment.handle(toPaymentEvent(event))).toBe('mismatch');
    }
    expect(await s.balance()).toBe(before);
  });

  it('a retry after a crash between charging the card and granting makes no second PaymentIntent', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    crashOnce(s.fulfilment, 'fulfil');
    const [entry] = s.queue.entries;
    await expect(s.work()).rejects.toThrow('crash');
    expect(await s.balance()).toBe(110);
    expect(await s.autoRecharge.run(entry!.accountId, entry!.triggerId)).toBe('charged');
    expect(s.intents()).toHaveLength(1);
    expect(await s.balance()).toBe(210);
  });

  it('turning automatic recharge off before the worker sends the recharge to Stripe stops it: no PaymentIntent, the slot freed, no failure', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    expect(s.queue.entries).toHaveLength(1);
    await s.service.saveAutoRecharge(s.accountId, { enabled: '', threshold: '120', credits: '100' }, actor);
    expect(await s.work()).toEqual(['canceled']);
    expect(s.intents()).toHaveLength(0);
    expect(await s.balance()).toBe(110);
    expect(await s.inFlight()).toBeNull();
    expect((await s.billing.get(s.accountId))!.rechargeFailure).toBeNull();
    expect(s.entries('credits.recharge_failed')).toHaveLength(0);
    expect(s.published.size).toBe(0);
    // Turned on again, the next charge below the threshold recharges as before.
    await s.service.saveAutoRecharge(s.accountId, { enabled: 'on', threshold: '120', credits: '100' }, actor);
    await s.charge(1);
    expect(await s.work()).toEqual(['charged']);
    expect(await s.balance()).toBe(209);
  });

  it('turned off after the recharge was sent to Stripe (a crash before its grant), the retry still grants it', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    const [entry] = s.queue.entries;
    crashOnce(s.fulfilment, 'fulfil');
    await expect(s.work()).rejects.toThrow('crash');
    await s.service.saveAutoRecharge(s.accountId, { enabled: '', threshold: '120', credits: '100' }, actor);
    expect(await s.autoRecharge.run(entry!.accountId, entry!.triggerId)).toBe('charged');
    expect(s.intents()).toHaveLength(1);
    expect(await s.balance()).toBe(210);
    expect(await s.inFlight()).toBeNull();
  });

  it('a retry after the pack was changed buys the pack the recharge was claimed for, on the same PaymentIntent', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    const [entry] = s.queue.entries;
    crashOnce(s.fulfilment, 'fulfil');
    await expect(s.work()).rejects.toThrow('crash');
    // The owner picks the 1000 pack while the charged recharge waits for its retry.
    await s.service.saveAutoRecharge(s.accountId, { enabled: 'on', threshold: '120', credits: '1000' }, actor);
    expect(await s.autoRecharge.run(entry!.accountId, entry!.triggerId)).toBe('charged');
    expect(s.intents().map(([, pi]) => [pi.credits, pi.amount])).toEqual([[100, 500]]);
    expect(await s.balance()).toBe(210);
    expect(await s.inFlight()).toBeNull();
    // The next recharge buys the new pack.
    await s.charge(100);
    await s.work();
    expect(s.intents().map(([, pi]) => pi.credits)).toEqual([100, 1000]);
    expect(await s.balance()).toBe(1110);
  });

  it('the sweep queues again a recharge whose queue entry was lost, once it is five minutes old', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    await s.charge(20);
    s.queue.entries.splice(0);
    expect(await s.autoRecharge.sweep(new Date(s.now().getTime() - 5 * 60_000))).toBe(0);
    s.later(5 * 60_000 + 1);
    expect(await s.autoRecharge.sweep(new Date(s.now().getTime() - 5 * 60_000))).toBe(1);
    expect(await s.work()).toEqual(['charged']);
    expect(await s.balance()).toBe(210);
    expect(await s.autoRecharge.sweep(s.later(HOUR))).toBe(0);
  });

  it('only a charge starts a recharge: a refunded purchase or a grant that leaves the balance below the threshold charges no card', async () => {
    const s = await setup({ credits: 0, threshold: 120 });
    // 100 credits bought through Checkout, below the threshold of 120 since the start: no charge yet.
    expect(await s.balance()).toBe(100);
    s.provider.refund(`ch_${s.accountId}`, 250);
    const checkout = [...s.provider.paymentIntents.entries()].find(([, pi]) => pi.accountId === s.accountId && !pi.offSession)![0];
    expect(await s.fulfilment.handle({ kind: 'refunded', chargeId: `ch_${s.accountId}`, paymentIntentId: checkout })).toBe('refunds_taken_back');
    expect(await s.balance()).toBe(50);
    await s.credits.grant(s.accountId, 5, 'grant-1', actor);
    expect(await s.balance()).toBe(55);
    expect(s.queue.entries).toHaveLength(0);
    expect(await s.inFlight()).toBeNull();
    // The next charge does.
    await s.charge(1);
    expect(s.queue.entries).toHaveLength(1);
  });

  it('nothing is claimed without Stripe, or with AUTO_RECHARGE_MAX_PER_DAY=0', async () => {
    for (const opts of [{ enabled: false }, { maxPerDay: 0 }]) {
      const s = await setup({ credits: 30, threshold: 120, ...opts });
      await s.charge(50);
      expect(s.queue.entries).toHaveLength(0);
      expect(await s.inFlight()).toBeNull();
    }
  });
});

describe('auto-recharge: at most AUTO_RECHARGE_MAX_PER_DAY per account and UTC day', () => {
  it('stops at the cap, says so on the Billing page, and starts again the next UTC day', async () => {
    const s = await setup({ credits: 30, threshold: 120, maxPerDay: 2 });
    for (let i = 0; i < 2; i++) {
      await s.charge(100);
      expect(await s.work()).toEqual(['charged']);
      s.later(HOUR);
    }
    expect(await s.balance()).toBe(130);
    expect((await s.service.overview(s.accountId)).rechargeLimit).toEqual({ maxPerDay: 2 });
    // 12:00 UTC: a third crossing that day starts nothing, however many charges follow.
    await s.charge(100);
    await s.charge(10);
    expect(s.queue.entries).toHaveLength(0);
    expect(await s.inFlight()).toBeNull();
    expect((await s.billing.get(s.accountId))?.autoRecharge?.enabled).toBe(true);
    // 23:59:59 UTC, still that day.
    s.later(new Date('2026-03-01T23:59:59Z').getTime() - s.now().getTime());
    await s.charge(1);
    expect(s.queue.entries).toHaveLength(0);
    // Midnight UTC: the next charge below the threshold recharges.
    s.later(1_000);
    expect((await s.service.overview(s.accountId)).rechargeLimit).toBeNull();
    await s.charge(1);
    expect(await s.work()).toEqual(['charged']);
    expect(s.intents()).toHaveLength(3);
    expect(await s.balance()).toBe(118);
  });
});

describe('auto-recharge: a failure turns it off', () => {
  it('a decline turns automatic recharge off, records why, sends credits.recharge_failed and audits it, once', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    s.provider.card = 'decline';
    await s.charge(20);
    const [entry] = s.queue.entries;
    expect(await s.work()).toEqual(['failed']);
    expect(await s.balance()).toBe(110);
    const state = await s.billing.get(s.accountId);
    expect(state).toMatchObject({ autoRecharge: { enabled: false }, rechargeInFlight: null, rechargeFailure: { reason: 'generic_decline', at: s.now() } });
    expect([...s.published.values()]).toEqual([{ accountId: s.accountId, event: { triggerId: entry!.triggerId, credits: 100, amount: 500, currency: 'usd', reason: 'generic_decline', at: s.now() } }]);
    expect(s.entries('credits.recharge_failed')).toHaveLength(1);
    expect(s.entries('credits.recharge_failed')[0]).toMatchObject({ actor: 'worker', amount: 100, details: { reason: 'generic_decline', amount: 500 } });
    // The Billing page shows it.
    expect((await s.service.overview(s.accountId)).account.rechargeFailure).toMatchObject({ reason: 'generic_decline' });

    // The queue's retry of the same entry changes nothing; further charges start nothing.
    expect(await s.autoRecharge.run(entry!.accountId, entry!.triggerId)).toBe('stale');
    await s.charge(10);
    expect(s.queue.entries).toHaveLength(0);
    expect(s.published.size).toBe(1);
    expect(s.entries('credits.recharge_failed')).toHaveLength(1);
    expect(s.intents()).toHaveLength(1);

    // Turned on again (the card fixed): the failure is cleared and the next crossing recharges.
    s.provider.card = 'succeed';
    await s.service.saveAutoRecharge(s.accountId, { enabled: 'on', threshold: '120', credits: '100' }, actor);
    expect((await s.billing.get(s.accountId))?.rechargeFailure).toBeNull();
    await s.charge(1);
    expect(await s.work()).toEqual(['charged']);
    expect(await s.balance()).toBe(199);
  });

  it('a crash while failing (after the audit, before the marker) is retried whole: one event, one audit entry', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    s.provider.card = 'decline';
    await s.charge(20);
    const [entry] = s.queue.entries;
    crashOnce(s.billing, 'failRecharge');
    await expect(s.work()).rejects.toThrow('crash');
    expect((await s.billing.get(s.accountId))?.autoRecharge?.enabled).toBe(true);
    expect(await s.autoRecharge.run(entry!.accountId, entry!.triggerId)).toBe('failed');
    expect((await s.billing.get(s.accountId))?.autoRecharge?.enabled).toBe(false);
    expect(s.published.size).toBe(1);
    expect(s.entries('credits.recharge_failed')).toHaveLength(1);
    expect(s.intents()).toHaveLength(1);
  });

  it('a pack no longer on sale fails the recharge without charging the card', async () => {
    const s = await setup({ credits: 30, threshold: 120 });
    // Saved when CREDIT_PACKS still sold 50 credits.
    await s.billing.saveAutoRecharge(s.accountId, { enabled: true, threshold: 120, credits: 50 });
    await s.charge(20);
    expect(await s.work()).toEqual(['failed']);
    expect(s.intents()).toHaveLength(0);
    expect((await s.billing.get(s.accountId))?.rechargeFailure?.reason).toBe('the chosen pack is no longer on sale');
    expect([...s.published.values()][0]!.event).toMatchObject({ credits: 50, amount: 0, reason: 'the chosen pack is no longer on sale' });
  });
});
