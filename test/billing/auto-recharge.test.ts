// Automatic recharge against the Stripe stand-in, with the worker in this process: 20 concurrent
// lookups that cross the threshold make exactly one off-session PaymentIntent, whose credits are
// granted once (by the worker and by `payment_intent.succeeded`, whichever comes first); a decline
// turns automatic recharge off, shows on the Billing page and sends `credits.recharge_failed`.
import { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, signIn } from '../helpers/console.js';
import { until } from '../helpers/until.js';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

const WEBHOOK_SECRET = 'whsec_recharge_standin_secret_0123';
let standIn: StripeStandIn;
let t: TestApp;
let worker: RunningWorker;
let receiver: Receiver;
const actor = { actor: 'test', ip: null, host: 'test' };

beforeAll(async () => {
  standIn = await startStripeStandIn({ webhookSecret: WEBHOOK_SECRET });
  t = await startTestApp({
    ...standIn.gatewayEnv(),
    CREDIT_PACKS: '100:500,1000:4000',
    WEBHOOK_ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '1s,1s,1s',
  });
  standIn.webhookUrl = `${t.baseUrl}/api/stripe/webhook`;
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} }, t.services.billing);
  receiver = await startReceiver();
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await standIn?.close();
  await receiver?.close();
});

const balance = async (accountId: string) => (await t.services.credits.getAccount(accountId))!.credits;
const accountDoc = (accountId: string) => t.connection.db!.collection('accounts').findOne({ _id: new Types.ObjectId(accountId) });

/** An account that bought 100 credits through Checkout (so a card is saved), with auto-recharge on. */
async function accountWithRecharge(credits: number, threshold: number) {
  const account = await t.createAccountWithKey({ credits });
  const url = await t.services.billing.service.startCheckout(account.accountId, 100, { successUrl: `${t.baseUrl}/console/billing?checkout=success`, cancelUrl: `${t.baseUrl}/console/billing` });
  await standIn.pay(url.split('/pay/')[1]!);
  await standIn.idle();
  expect(await balance(account.accountId)).toBe(credits + 100);
  await t.services.billing.service.saveAutoRecharge(account.accountId, { enabled: 'on', threshold: String(threshold), credits: '100' }, actor);
  return account;
}

function lookup(key: string) {
  return fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ keyword: 'serendipity' }) });
}

describe('automatic recharge', () => {
  it('20 concurrent lookups crossing the threshold make exactly one PaymentIntent, granted once', async () => {
    const { accountId, key } = await accountWithRecharge(30, 120);
    const before = standIn.paymentIntentsCreated;
    const answers = await Promise.all(Array.from({ length: 20 }, () => lookup(key)));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    // 130 − 20 + 100, once the worker has charged the card and the grant is in.
    await until(async () => (await balance(accountId)) === 210);
    await until(async () => (await accountDoc(accountId))?.rechargeInFlight === null);
    await standIn.idle();
    expect(standIn.paymentIntentsCreated - before).toBe(1);
    // payment_intent.succeeded came too: still granted once.
    const intent = [...standIn.paymentIntents.values()].find((pi) => (pi.metadata as Record<string, string>).account_id === accountId && (pi.metadata as Record<string, string>).purpose === 'auto_recharge')!;
    const delivered = standIn.sent.filter((s) => s.event.type === 'payment_intent.succeeded' && (s.event.data as { object: { id: string } }).object.id === intent.id);
    expect(delivered.map((d) => d.status)).toEqual([200]);
    expect((await standIn.send(standIn.event('payment_intent.succeeded', intent))).status).toBe(200);
    expect(await balance(accountId)).toBe(210);
    const purchased = await t.connection.db!.collection('audit_entries').find({ accountId, event: 'credits.purchased' }).toArray();
    expect(purchased.map((e) => e.amount).sort()).toEqual([100, 100]);
    expect(standIn.paymentIntentsCreated - before).toBe(1);
  });

  it('a decline turns automatic recharge off, shows on the Billing page, sends credits.recharge_failed and is audited', async () => {
    const { accountId, key } = await accountWithRecharge(0, 95);
    const endpoint = await t.services.webhooks.create(accountId, { url: receiver.url, events: ['credits.recharge_failed'] }, t.baseUrl);
    receiver.secret = endpoint.secret;
    const email = `billing-${accountId}@example.com`;
    await t.services.console.users.create(accountId, email, 'a long enough password 123', actor);
    standIn.card = 'decline';
    try {
      for (let i = 0; i < 6; i++) expect((await lookup(key)).status).toBe(200);
      await until(async () => (await accountDoc(accountId))?.autoRecharge?.enabled === false);
    } finally {
      standIn.card = 'succeed';
    }
    expect(await balance(accountId)).toBe(94);
    const doc = await accountDoc(accountId);
    expect(doc).toMatchObject({ rechargeInFlight: null, rechargeFailure: { reason: 'generic_decline' } });
    await until(() => receiver.received.some((r) => r.body?.type === 'credits.recharge_failed'));
    const event = receiver.received.find((r) => r.body?.type === 'credits.recharge_failed')!;
    expect(event.verified).toBe(true);
    expect(event.body!.data).toEqual({ credits: 100, amount: 500, currency: 'usd', reason: 'generic_decline' });
    expect(await t.connection.db!.collection('audit_entries').countDocuments({ accountId, event: 'credits.recharge_failed' })).toBe(1);

    const session = await signIn(t, email, 'a long enough password 123');
    const page = await (await consoleGet(t, '/console/billing', session.cookie)).text();
    expect(page).toContain('Automatic recharge failed');
    // Off: further charges start nothing.
    const created = standIn.paymentIntentsCreated;
    expect((await lookup(key)).status).toBe(200);
    expect(standIn.paymentIntentsCreated).toBe(created);
  });
});
