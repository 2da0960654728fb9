/**
 * A newcomer's first hour without a dead end: a local sign-up starts with credits (SIGNUP_CREDITS is
 * 100 outside production, 0 in it), Settings shows the account's id for the CLI, and the Overview's
 * low-balance warning always says what to do next: buy on Billing, ask someone who may, or the CLI
 * command with this account's id when buying is not enabled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, createConsoleUser, sameOrigin, signIn } from '../helpers/console.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';
import { addMember } from '../helpers/team.js';

const PASSWORD = 'a newcomer password, long enough';

/** The Overview's low-balance warning, or '' when there is none. */
const warningOf = (page: string) => /<p class="warning" role="status">[\s\S]*?<\/p>/.exec(page)?.[0] ?? '';

describe('SIGNUP_CREDITS default', () => {
  it('is 100 outside production and 0 with NODE_ENV=production; a set value wins either way', () => {
    expect(loadConfig({}).SIGNUP_CREDITS).toBe(100);
    expect(loadConfig({ NODE_ENV: 'development' }).SIGNUP_CREDITS).toBe(100);
    expect(loadConfig({ NODE_ENV: 'test' }).SIGNUP_CREDITS).toBe(100);
    expect(loadConfig({ NODE_ENV: 'production' }).SIGNUP_CREDITS).toBe(0);
    expect(loadConfig({ NODE_ENV: 'production', SIGNUP_CREDITS: '25' }).SIGNUP_CREDITS).toBe(25);
    expect(loadConfig({ SIGNUP_CREDITS: '0' }).SIGNUP_CREDITS).toBe(0);
    expect(() => loadConfig({ SIGNUP_CREDITS: '-1' })).toThrow(/SIGNUP_CREDITS/);
  });
});

describe('a local run with no SIGNUP_CREDITS and no Stripe', () => {
  let t: TestApp;
  let smtp: TestSmtpServer;
  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({ SMTP_URL: smtp.url, dbName: 't_first_hour' });
  });
  afterAll(async () => {
    await t?.close();
    await smtp?.close();
  });

  it('a sign-up starts with 100 credits, and Settings shows the account id as text', async () => {
    const form = await fetch(`${t.baseUrl}/console/sign-up`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t) },
      body: new URLSearchParams({ accountName: 'Newcomer', email: 'newcomer@example.com', password: PASSWORD }),
    });
    expect(form.status).toBe(200);
    const browser = form.headers.getSetCookie().find((c) => c.startsWith('console_signup='))!.split(';')[0]!;
    const link = (await smtp.nextMessage('newcomer@example.com')).links[0]!.replace(/^https?:\/\/[^/]+/, t.baseUrl);
    const opened = await fetch(link, { redirect: 'manual', headers: { cookie: browser } });
    expect(opened.status).toBe(303);
    const session = opened.headers.getSetCookie().find((c) => c.startsWith('console_session='))!.split(';')[0]!;
    const account = await t.connection.db!.collection('accounts').findOne({ name: 'Newcomer' });
    expect(account?.credits).toBe(100);

    const overview = await (await consoleGet(t, '/console', session)).text();
    expect(overview).toContain('data-balance>100<');
    expect(warningOf(overview)).toBe('');

    const settings = await (await consoleGet(t, '/console/settings', session)).text();
    const id = account!._id.toHexString();
    expect(settings).toMatch(new RegExp(`<dt>Account ID</dt>\\s*<dd><code data-account-id>${id}</code></dd>`));
  });

  it('a low balance without buying names the CLI command with this account id; at zero it says calls fail now', async () => {
    for (const credits of [3, 0]) {
      const user = await createConsoleUser(t, { credits });
      const { cookie } = await signIn(t, user.email, user.password);
      const page = warningOf(await (await consoleGet(t, '/console', cookie!)).text());
      expect(page).toContain('Low balance:');
      expect(page).toContain(`npm run cli -- credits grant --account ${user.accountId} --amount 100`);
      expect(page).not.toContain('href="/console/billing"');
      if (credits === 0) {
        expect(page).toContain('No credits left');
        expect(page).not.toContain('once it reaches zero');
      } else {
        expect(page).toContain('3 credits left');
      }
    }
  });
});

describe('with buying enabled', () => {
  let standIn: StripeStandIn;
  let t: TestApp;
  beforeAll(async () => {
    standIn = await startStripeStandIn({ webhookSecret: 'whsec_first_hour_0123456789abcdef' });
    t = await startTestApp({ STRIPE_SECRET_KEY: 'sk_test_standin', STRIPE_WEBHOOK_SECRET: 'whsec_first_hour_0123456789abcdef', STRIPE_API_BASE: standIn.base, dbName: 't_first_hour_stripe' });
  });
  afterAll(async () => {
    await t?.close();
    await standIn?.close();
  });

  it('the low-balance warning links an owner to Billing, and tells a developer who can buy', async () => {
    const owner = await createConsoleUser(t, { credits: 2 });
    const { cookie } = await signIn(t, owner.email, owner.password);
    const ownerPage = warningOf(await (await consoleGet(t, '/console', cookie!)).text());
    expect(ownerPage).toContain('Low balance:');
    expect(ownerPage).toMatch(/<a href="\/console\/billing">Buy credits<\/a>/);
    expect(ownerPage).not.toContain('npm run cli');

    const developer = await addMember(t, owner.accountId, 'developer');
    const developerPage = warningOf(await (await consoleGet(t, '/console', developer.cookie)).text());
    expect(developerPage).toContain('Low balance:');
    expect(developerPage).toContain('Ask an owner or admin of this account to buy credits on the Billing page');
    // A link the developer would get 403 from is no way out.
    expect(developerPage).not.toContain('Buy credits</a>');
  });
});
