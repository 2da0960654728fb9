// POST /api/stripe/webhook on two gateway instances sharing one database, fed by the Stripe stand-in
// (test/fixtures/stripe-standin.ts): the same event delivered 10 times at once grants once; an
// out-of-order pair grants once; a missing, wrong or stale signature is a 400 that changes nothing;
// refunds take back their share once each; events that are not ours do nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoPurchaseStore } from '../../src/data/purchases.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';

const WEBHOOK_SECRET = 'whsec_test_standin_secret_0123456789';
let standIn: StripeStandIn;
let a: TestApp;
let b: TestApp;

beforeAll(async () => {
  standIn = await startStripeStandIn({ webhookSecret: WEBHOOK_SECRET });
  const env = { ...standIn.gatewayEnv(), CREDIT_PACKS: '100:500,1000:4000' };
  a = await startTestApp(env);
  b = await startTestApp(env);
  standIn.webhookUrl = `${a.baseUrl}/api/stripe/webhook`;
});

afterAll(async () => {
  await b?.close();
  await a?.close();
  await standIn?.close();
});

const balance = async (accountId: string) => (await a.services.credits.getAccount(accountId))!.credits;
/** Paid purchases (a session the gateway created is recorded `open` until it is paid). */
const purchases = (accountId: string) => a.connection.db!.collection('purchases').countDocuments({ accountId, state: { $ne: 'open' } });
const auditCount = (accountId: string, event: string) => a.connection.db!.collection('audit_entries').countDocuments({ accountId, event });

/** A Checkout Session for `credits` created through the gateway, as paid (not yet reported). */
async function paidSession(accountId: string, credits = 100) {
  const url = await a.services.billing.service.startCheckout(accountId, credits, { successUrl: 'http://127.0.0.1/ok', cancelUrl: 'http://127.0.0.1/no' });
  const session = standIn.sessions.get(url.split('/pay/')[1]!)!;
  Object.assign(session, { status: 'complete', payment_status: 'paid', payment_intent: `pi_test_for_${String(session.id)}` });
  return session;
}

describe('checkout.session.completed', () => {
  it('delivered 10 times concurrently to two instances grants the pack once', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 7 });
    const session = await paidSession(accountId);
    const event = standIn.event('checkout.session.completed', session);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => standIn.send(event, { url: `${(i % 2 ? b : a).baseUrl}/api/stripe/webhook` })));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(answers.filter((r) => JSON.parse(r.body).outcome === 'granted').length).toBeGreaterThanOrEqual(1);
    expect(await balance(accountId)).toBe(107);
    expect(await purchases(accountId)).toBe(1);
    expect(await auditCount(accountId, 'credits.purchased')).toBe(1);
    // Late: a day later Stripe sends it again.
    expect((await standIn.send(standIn.event('checkout.session.completed', session))).status).toBe(200);
    expect(await balance(accountId)).toBe(107);
  });

  it('async_payment_succeeded before completed grants once', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 0 });
    const session = await paidSession(accountId, 1000);
    const first = await standIn.send(standIn.event('checkout.session.async_payment_succeeded', session), { url: `${b.baseUrl}/api/stripe/webhook` });
    const second = await standIn.send(standIn.event('checkout.session.completed', session));
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(JSON.parse(second.body).outcome).toBe('already_granted');
    expect(await balance(accountId)).toBe(1000);
    const [entry] = await a.connection.db!.collection('audit_entries').find({ accountId, event: 'credits.purchased' }).toArray();
    expect(entry).toMatchObject({ amount: 1000, details: { purchaseId: session.id, credits: 1000, amount: 4000, currency: 'usd' } });
  });

  it('an unpaid completed session (a delayed payment method) grants nothing', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 3 });
    const session = await paidSession(accountId);
    session.payment_status = 'unpaid';
    const res = await standIn.send(standIn.event('checkout.session.completed', session));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).outcome).toBe('ignored');
    expect(await balance(accountId)).toBe(3);
  });

  it("a session of an account this gateway does not have (another deployment on the same Stripe account) is 200 ignored and records nothing", async () => {
    const elsewhere = '0123456789abcdef01234567';
    const session = { id: 'cs_test_another_deployment', object: 'checkout.session', mode: 'payment', payment_status: 'paid', amount_total: 500, currency: 'usd', client_reference_id: elsewhere, metadata: { account_id: elsewhere, credits: '100' }, payment_intent: 'pi_test_another_deployment' };
    const res = await standIn.send(standIn.event('checkout.session.completed', session));
    expect([res.status, JSON.parse(res.body).outcome]).toEqual([200, 'ignored']);
    expect(await a.connection.db!.collection('purchases').countDocuments({ _id: session.id as never })).toBe(0);
  });
});

describe('checkout: the recorded purchase, never the event, says what was bought', () => {
  let logged: TestApp;
  const lines: string[] = [];
  beforeAll(async () => {
    logged = await startTestApp({ ...standIn.gatewayEnv(), CREDIT_PACKS: '100:500,1000:4000', LOG_LEVEL: 'warn', logStream: { write: (line: string) => lines.push(line) } });
  });
  afterAll(async () => {
    await logged?.close();
  });
  const mismatches = (sessionId: string) => lines.map((l) => JSON.parse(l) as { msg: string; sessionId?: string }).filter((l) => l.msg.includes('mismatch') && l.sessionId === sessionId);
  const sendTo = (event: Record<string, unknown>) => standIn.send(event, { url: `${logged.baseUrl}/api/stripe/webhook` });

  it("a signed event whose metadata claims other credits grants the pack the session was created for", async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 0 });
    const session = await paidSession(accountId, 100);
    session.metadata = { ...(session.metadata as Record<string, string>), credits: '100000' };
    const res = await sendTo(standIn.event('checkout.session.completed', session));
    expect([res.status, JSON.parse(res.body).outcome]).toEqual([200, 'granted']);
    expect(await balance(accountId)).toBe(100);
    const [entry] = await a.connection.db!.collection('audit_entries').find({ accountId, event: 'credits.purchased' }).toArray();
    expect(entry).toMatchObject({ amount: 100, details: { credits: 100, amount: 500, currency: 'usd' } });
  });

  it('an amount or a currency that disagrees with the recorded purchase grants nothing, is logged as a mismatch and answered 200', async () => {
    for (const change of [{ amount_total: 1, metadata: { credits: '100000' } }, { currency: 'eur' }, { amount_total: 4000 }]) {
      const { accountId } = await a.createAccountWithKey({ credits: 0 });
      const session = await paidSession(accountId, 100);
      Object.assign(session, { ...change, metadata: { ...(session.metadata as Record<string, string>), ...change.metadata } });
      for (let i = 0; i < 2; i++) {
        const res = await sendTo(standIn.event('checkout.session.completed', session));
        expect([res.status, JSON.parse(res.body).outcome], JSON.stringify(change)).toEqual([200, 'mismatch']);
      }
      expect(await balance(accountId)).toBe(0);
      expect(await auditCount(accountId, 'credits.purchased')).toBe(0);
      expect(mismatches(session.id as string)).toHaveLength(2);
    }
  });

  it("a paid session the gateway has no record of (created by the previous release) grants the catalog's pack of that price, never the metadata's count", async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 0 });
    const legacy = (id: string, amount: number) => ({ id, object: 'checkout.session', mode: 'payment', payment_status: 'paid', amount_total: amount, currency: 'usd', client_reference_id: accountId, metadata: { account_id: accountId, credits: '100000' }, payment_intent: `pi_for_${id}` });
    const res = await sendTo(standIn.event('checkout.session.completed', legacy('cs_test_legacy_1', 4000)));
    expect([res.status, JSON.parse(res.body).outcome]).toEqual([200, 'granted']);
    expect(await balance(accountId)).toBe(1000);
    // No pack costs 1: nothing is granted.
    const cheap = await sendTo(standIn.event('checkout.session.completed', legacy('cs_test_legacy_2', 1)));
    expect([cheap.status, JSON.parse(cheap.body).outcome]).toEqual([200, 'mismatch']);
    expect(await balance(accountId)).toBe(1000);
    expect(mismatches('cs_test_legacy_2')).toHaveLength(1);
  });
});

describe('the sweep', () => {
  it('finishes a purchase a crash left recorded but not granted, once', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 1 });
    const purchases = new MongoPurchaseStore(a.connection);
    await purchases.record({ id: 'cs_test_swept_1', kind: 'checkout', accountId, credits: 100, amount: 500, currency: 'usd', paymentIntentId: 'pi_test_swept_1' }, new Date(Date.now() - 120_000));
    expect(await a.services.billing.fulfilment.sweep(new Date(Date.now() - 60_000))).toBe(1);
    expect(await balance(accountId)).toBe(101);
    expect(await a.services.billing.fulfilment.sweep(new Date(Date.now() - 60_000))).toBe(0);
    // Stripe's late delivery of the same session changes nothing.
    const event = standIn.event('checkout.session.completed', { id: 'cs_test_swept_1', object: 'checkout.session', mode: 'payment', payment_status: 'paid', amount_total: 500, currency: 'usd', metadata: { account_id: accountId, credits: '100' }, payment_intent: 'pi_test_swept_1' });
    expect(JSON.parse((await standIn.send(event)).body).outcome).toBe('already_granted');
    expect(await balance(accountId)).toBe(101);
  });
});

describe('signatures', () => {
  it('a missing, wrong or stale Stripe-Signature is a 400 in the contract shape and changes nothing', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 5 });
    const session = await paidSession(accountId);
    const event = standIn.event('checkout.session.completed', session);
    const wrong = (await import('stripe')).default.webhooks.generateTestHeaderString({ payload: JSON.stringify(event), secret: 'whsec_someone_else' });
    for (const signature of [null, wrong, 't=1,v1=deadbeef', '']) {
      const res = await standIn.send(event, { signature });
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ code: 'invalid_stripe_signature', error: 'Missing, invalid or expired Stripe-Signature', requestId: expect.any(String) });
    }
    const stale = await standIn.send(event, { timestamp: Math.floor(Date.now() / 1000) - 301 });
    expect(stale.status).toBe(400);
    expect(await balance(accountId)).toBe(5);
    expect(await purchases(accountId)).toBe(0);
  });

  it('a body changed after signing is refused (the signature covers the exact bytes)', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 5 });
    const session = await paidSession(accountId);
    const event = standIn.event('checkout.session.completed', session);
    const payload = JSON.stringify(event);
    const header = (await import('stripe')).default.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    const reformatted = JSON.stringify(event, null, 1);
    const res = await fetch(`${a.baseUrl}/api/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: reformatted });
    expect(res.status).toBe(400);
    expect(await balance(accountId)).toBe(5);
  });
});

describe('other events', () => {
  it("a Checkout payment's own payment_intent.succeeded and charge.succeeded grant nothing", async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 2 });
    const session = await paidSession(accountId);
    const intent = { id: session.payment_intent, object: 'payment_intent', amount: 500, amount_received: 500, currency: 'usd', metadata: { account_id: accountId, credits: '100' }, status: 'succeeded' };
    for (const event of [standIn.event('payment_intent.succeeded', intent), standIn.event('charge.succeeded', { id: 'ch_x', object: 'charge', payment_intent: intent.id }), standIn.event('customer.created', { id: 'cus_x', object: 'customer' })]) {
      const res = await standIn.send(event);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body).outcome).toBe('ignored');
    }
    expect(await balance(accountId)).toBe(2);
  });
});

describe('charge.refunded', () => {
  it('takes back the refunded share once per refund, below zero if need be', async () => {
    const { accountId } = await a.createAccountWithKey({ credits: 0 });
    await a.services.billing.service.startCheckout(accountId, 100, { successUrl: 'http://127.0.0.1/ok', cancelUrl: 'http://127.0.0.1/no' });
    const sessionId = [...standIn.sessions.values()].find((s) => (s.metadata as Record<string, string>).account_id === accountId)!.id as string;
    await standIn.pay(sessionId);
    await standIn.idle();
    expect(await balance(accountId)).toBe(100);
    // Spend 80 of them, then half the payment is refunded: 50 go back, twice delivered.
    await a.services.credits.charge(accountId, 80, null);
    const intentId = standIn.sessions.get(sessionId)!.payment_intent as string;
    const half = standIn.refund(intentId, 250);
    expect((await standIn.send(half)).status).toBe(200);
    expect((await standIn.send(half, { url: `${b.baseUrl}/api/stripe/webhook` })).status).toBe(200);
    expect(await balance(accountId)).toBe(-30);
    expect(await auditCount(accountId, 'credits.payment_refunded')).toBe(1);
    // A 402 while the balance is below zero.
    await expect(a.services.credits.charge(accountId, 1, null)).rejects.toMatchObject({ code: 'insufficient_credits' });
    // The rest refunded: the second refund's 50 only (the first is not taken twice).
    const rest = standIn.refund(intentId, 250);
    expect((await standIn.send(rest)).status).toBe(200);
    expect(await balance(accountId)).toBe(-80);
    expect(await auditCount(accountId, 'credits.payment_refunded')).toBe(2);
  });

  it('a refund of a payment that is not ours is acknowledged and does nothing', async () => {
    const res = await standIn.send(standIn.event('charge.refunded', { id: 'ch_elsewhere', object: 'charge', payment_intent: 'pi_elsewhere', amount: 100, amount_refunded: 100 }));
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).outcome).toBe('ignored');
  });
});

describe('without Stripe configured', () => {
  it('the route answers 404 payments_disabled', async () => {
    const plain = await startTestApp({});
    try {
      const res = await fetch(`${plain.baseUrl}/api/stripe/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=x' }, body: '{}' });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ code: 'payments_disabled' });
    } finally {
      await plain.close();
    }
  });
});
