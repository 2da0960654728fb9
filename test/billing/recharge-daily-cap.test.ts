// AUTO_RECHARGE_MAX_PER_DAY end to end, against the Stripe stand-in with the worker in this process:
// an account whose balance falls below its threshold more often than the cap in one UTC day is
// recharged exactly the cap's number of times (PaymentIntents at Stripe, grants), the Billing page then
// says the day's limit is reached, and the next UTC day recharges again. The billing clock is injected
// (the UTC day comes from it): the test moves it, never waits for midnight.
import { Types } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, signIn } from '../helpers/console.js';
import { until } from '../helpers/until.js';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';

const WEBHOOK_SECRET = 'whsec_recharge_cap_standin_secret_01';
const CAP = 2;
const DAY = 86_400_000;
// Days ahead of the real clock, so the billing sweep (which looks for recharges stuck since 5 minutes
// before the real now) never takes these for lost ones.
const firstDay = new Date(Math.floor(Date.now() / DAY) * DAY + 2 * DAY + 12 * 3_600_000);
let clock = firstDay;
let standIn: StripeStandIn;
let t: TestApp;
let worker: RunningWorker;
const actor = { actor: 'test', ip: null, host: 'test' };
const password = 'a long enough password 123';

beforeAll(async () => {
  standIn = await startStripeStandIn({ webhookSecret: WEBHOOK_SECRET });
  t = await startTestApp({
    ...standIn.gatewayEnv(),
    // A 2-credit pack: two lookups take the balance from 3 to 1, below a threshold of 2.
    CREDIT_PACKS: '2:500',
    AUTO_RECHARGE_MAX_PER_DAY: String(CAP),
    deps: { billingNow: () => clock },
  });
  standIn.webhookUrl = `${t.baseUrl}/api/stripe/webhook`;
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} }, t.services.billing);
});

afterAll(async () => {
  await worker?.stop();
  await t?.close();
  await standIn?.close();
});

const balance = async (accountId: string) => (await t.services.credits.getAccount(accountId))!.credits;
const accountDoc = (accountId: string) => t.connection.db!.collection('accounts').findOne({ _id: new Types.ObjectId(accountId) });
const rechargeIntents = (accountId: string) =>
  [...standIn.paymentIntents.values()].filter((pi) => {
    const metadata = pi.metadata as Record<string, string>;
    return metadata.account_id === accountId && metadata.purpose === 'auto_recharge';
  });
const rechargeGrants = (accountId: string) => t.connection.db!.collection('audit_entries').countDocuments({ accountId, event: 'credits.purchased', 'details.kind': 'auto_recharge' });

function lookup(key: string) {
  return fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ keyword: 'serendipity' }) });
}

/** Two lookups: 3 → 1 credits, below the threshold of 2 (the trigger has claimed, or not, when the answer comes). */
async function fallBelowThreshold(key: string) {
  for (let i = 0; i < 2; i++) expect((await lookup(key)).status).toBe(200);
}

/** Waits until the recharge in flight has been charged and granted: balance back to `expected`, slot free. */
async function recharged(accountId: string, expected: number) {
  await until(async () => (await balance(accountId)) === expected && (await accountDoc(accountId))?.rechargeInFlight === null);
}

describe('AUTO_RECHARGE_MAX_PER_DAY', () => {
  it('recharges at most the cap per UTC day, says so on the Billing page, and recharges again the next day', async () => {
    const { accountId, key } = await t.createAccountWithKey({ credits: 1 });
    const url = await t.services.billing.service.startCheckout(accountId, 2, { successUrl: `${t.baseUrl}/console/billing?checkout=success`, cancelUrl: `${t.baseUrl}/console/billing` });
    await standIn.pay(url.split('/pay/')[1]!);
    await standIn.idle();
    expect(await balance(accountId)).toBe(3);
    await t.services.billing.service.saveAutoRecharge(accountId, { enabled: 'on', threshold: '2', credits: '2' }, actor);
    const email = `cap-${accountId}@example.com`;
    await t.services.console.users.create(accountId, email, password, actor);
    const { cookie } = await signIn(t, email, password);
    const billingPage = async () => (await consoleGet(t, '/console/billing', cookie)).text();

    // The cap's number of crossings in one UTC day, each recharged back above the threshold.
    for (let i = 0; i < CAP; i++) {
      clock = new Date(firstDay.getTime() + i * 3_600_000);
      await fallBelowThreshold(key);
      await recharged(accountId, 3);
      // Said once the day's last one has been claimed, not before.
      if (i < CAP - 1) expect(await billingPage()).not.toContain('Daily limit of automatic recharges reached');
      if (i === 0) expect(await billingPage()).toContain(`(at most ${CAP} times a day, UTC)`);
    }

    // One more crossing the same day: nothing is claimed (the answer comes after the trigger decided).
    clock = new Date(firstDay.getTime() + 11 * 3_600_000);
    await fallBelowThreshold(key);
    expect(await balance(accountId)).toBe(1);
    expect((await accountDoc(accountId))?.rechargeInFlight).toBeNull();
    // Another charge still below the threshold claims nothing either.
    expect((await lookup(key)).status).toBe(200);
    expect((await accountDoc(accountId))?.rechargeInFlight).toBeNull();
    await standIn.idle();
    expect(rechargeIntents(accountId)).toHaveLength(CAP);
    expect(await rechargeGrants(accountId)).toBe(CAP);
    expect(await balance(accountId)).toBe(0);
    // What the owner sees: the day's limit, still on (no failure), and when it resumes.
    const capped = await billingPage();
    expect(capped).toContain(`Daily limit of automatic recharges reached (${CAP} a day)`);
    expect(capped).not.toContain('Automatic recharge failed');
    expect((await accountDoc(accountId))?.autoRecharge).toMatchObject({ enabled: true });

    // A credit for one more lookup, still that day: nothing claimed.
    await t.services.credits.grant(accountId, 1, `grant:cap-${accountId}`, actor);
    expect((await accountDoc(accountId))?.rechargeInFlight).toBeNull();

    // The next UTC day (one second past midnight): the next charge below the threshold recharges again.
    clock = new Date(firstDay.getTime() - 12 * 3_600_000 + DAY + 1_000);
    expect((await lookup(key)).status).toBe(200);
    await recharged(accountId, 2);
    await standIn.idle();
    expect(rechargeIntents(accountId)).toHaveLength(CAP + 1);
    expect(await rechargeGrants(accountId)).toBe(CAP + 1);
    expect(await billingPage()).not.toContain('Daily limit of automatic recharges reached');
  });
});
