// The Billing page over HTTP: without Stripe it shows balance and history only; with it, a pack's
// Checkout takes amount, currency and credits from the configuration whatever the form says; only
// this page's CSP lets a form go to Checkout's origin; a viewer is refused; a cross-site return
// without the cookie is continued same-site rather than sent to sign-in.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoTeamStore } from '../../src/data/team.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, createConsoleUser, signIn } from '../helpers/console.js';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';

let standIn: StripeStandIn;
let t: TestApp;
let plain: TestApp;
let noRecharge: TestApp;

beforeAll(async () => {
  standIn = await startStripeStandIn({ webhookSecret: 'whsec_console_billing_0123456789' });
  t = await startTestApp({ STRIPE_SECRET_KEY: 'sk_test_standin', STRIPE_WEBHOOK_SECRET: 'whsec_console_billing_0123456789', STRIPE_API_BASE: standIn.base, CREDIT_PACKS: '100:500,1000:4000', CREDIT_CURRENCY: 'eur' });
  plain = await startTestApp({});
  noRecharge = await startTestApp({ STRIPE_SECRET_KEY: 'sk_test_standin', STRIPE_API_BASE: standIn.base, AUTO_RECHARGE_MAX_PER_DAY: '0' });
});

afterAll(async () => {
  await noRecharge?.close();
  await plain?.close();
  await t?.close();
  await standIn?.close();
});

async function signedIn(app: TestApp, credits = 10) {
  const user = await createConsoleUser(app, { credits });
  const { cookie } = await signIn(app, user.email, user.password);
  return { user, cookie: cookie! };
}

describe('Billing page', () => {
  it('without STRIPE_SECRET_KEY shows the balance and history and says buying is not enabled', async () => {
    const { cookie } = await signedIn(plain, 42);
    const res = await consoleGet(plain, '/console/billing', cookie);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('Buying credits is not enabled on this server');
    expect(page).toContain('data-balance>42<');
    expect(page).toContain('Purchase history');
    expect(page).not.toContain('Buy 100 credits');
    // Nothing could ever be recharged without Stripe: no form that only leads to a refusal.
    expect(page).not.toContain('Automatic recharge');
    expect(page).not.toContain('/console/billing/auto-recharge');
    const checkout = await consolePost(plain, '/console/billing/checkout', cookie, { pack: '100' });
    expect(checkout.status).toBe(404);
  });

  it('lists the packs with prices, and only its CSP allows Checkout as a form target', async () => {
    const { cookie } = await signedIn(t);
    const res = await consoleGet(t, '/console/billing', cookie);
    const page = await res.text();
    expect(page).toContain('Buy 100 credits');
    expect(page).toContain('Buy 1000 credits');
    expect(page).toContain('€5.00');
    expect(page).toContain('€40.00');
    expect(res.headers.get('content-security-policy')).toContain(`form-action 'self' https://checkout.stripe.com ${standIn.base}`);
    const other = await consoleGet(t, '/console/webhooks', cookie);
    expect(other.headers.get('content-security-policy')).toContain("form-action 'self';");
  });

  it('a pack button answers 303 to Checkout, priced from the configuration whatever the form adds', async () => {
    const { user, cookie } = await signedIn(t);
    const res = await consolePost(t, '/console/billing/checkout', cookie, { pack: '100', amount: '1', credits: '100000', currency: 'usd' });
    expect(res.status).toBe(303);
    const location = res.headers.get('location')!;
    expect(location.startsWith(`${standIn.base}/pay/cs_`)).toBe(true);
    const session = standIn.sessions.get(location.split('/pay/')[1]!)!;
    expect(session).toMatchObject({ mode: 'payment', amount_total: 500, currency: 'eur', client_reference_id: user.accountId, metadata: { account_id: user.accountId, credits: '100' } });
    expect(session.payment_intent_data).toMatchObject({ setup_future_usage: 'off_session' });
    expect(String(session.success_url)).toBe(`${t.baseUrl}/console/billing?checkout=success`);
    // The account's one customer: a second purchase reuses it.
    const customers = standIn.customersCreated;
    expect((await consolePost(t, '/console/billing/checkout', cookie, { pack: '1000' })).status).toBe(303);
    expect(standIn.customersCreated).toBe(customers);
    const last = [...standIn.sessions.values()].at(-1)!;
    expect(last.customer).toBe(session.customer);
  });

  it('a pack that is not on sale is a 400 that names the packs', async () => {
    const { cookie } = await signedIn(t);
    const res = await consolePost(t, '/console/billing/checkout', cookie, { pack: '5' }, { 'sec-fetch-site': 'same-origin', origin: t.baseUrl, accept: 'application/json' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_request', error: 'pack must be one of 100, 1000 credits' });
  });

  it('automatic recharge needs a saved card', async () => {
    const { cookie } = await signedIn(t);
    const res = await consolePost(t, '/console/billing/auto-recharge', cookie, { enabled: 'on', threshold: '10', pack: '100' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Automatic recharge needs a card saved by an earlier purchase');
  });

  it('with AUTO_RECHARGE_MAX_PER_DAY=0 the page says automatic recharge is off and turning it on is refused', async () => {
    const { cookie } = await signedIn(noRecharge);
    const page = await (await consoleGet(noRecharge, '/console/billing', cookie)).text();
    expect(page).toContain('Automatic recharge is turned off on this server.');
    expect(page).toMatch(/<input type="checkbox" name="enabled" value="on" disabled/);
    const res = await consolePost(noRecharge, '/console/billing/auto-recharge', cookie, { enabled: 'on', threshold: '10', pack: '100' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Automatic recharge is turned off on this server');
  });

  it('a viewer is refused (403) and does not see the Billing link', async () => {
    const { user, cookie } = await signedIn(t);
    const userId = (await t.connection.db!.collection('console_users').findOne({ email: user.email }))?._id;
    await new MongoTeamStore(t.connection).setRole(user.accountId, String(userId), 'owner', 'viewer');
    const res = await consoleGet(t, '/console/billing', cookie);
    expect(res.status).toBe(403);
    const overview = await (await consoleGet(t, '/console', cookie)).text();
    expect(overview).not.toContain('href="/console/billing"');
    expect((await consolePost(t, '/console/billing/checkout', cookie, { pack: '100' })).status).toBe(403);
  });

  it('the cross-site return from Checkout without the cookie is continued same-site, not sent to sign-in', async () => {
    // node:http, not fetch: fetch sets Sec-Fetch-Mode itself.
    const { status, page } = await new Promise<{ status: number; page: string }>((resolve, reject) => {
      http
        .get(`${t.baseUrl}/console/billing?checkout=success`, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', accept: 'text/html' } }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, page: body }));
        })
        .on('error', reject);
    });
    expect(status).toBe(200);
    expect(page).toContain('<meta http-equiv="refresh" content="0;url=/console/billing?checkout=success">');
    const same = await consoleGet(t, '/console/billing?checkout=success', null, { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' });
    expect(same.status).toBe(303);
    expect(same.headers.get('location')).toMatch(/^\/console\/sign-in/);
  });
});
