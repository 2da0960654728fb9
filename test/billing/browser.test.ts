/**
 * Buying credits in a real browser (Debian's Chromium via playwright-core): Billing → Buy → the Stripe
 * stand-in's hosted page (another site: `localhost` against the gateway's `127.0.0.1`) → Pay → back on
 * the signed-in Billing page, which says `Payment received` and shows the balance up by exactly the
 * pack. The return is a cross-site navigation that carries no SameSite=Strict cookie: the console
 * continues it same-site. axe finds nothing serious; the page fits 375 px.
 * UPDATE_SCREENSHOTS=1 also writes docs/console/billing-1440.png and billing-375.png.
 */
import { AxeBuilder } from '@axe-core/playwright';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { createConsoleUser, type ConsoleUser } from '../helpers/console.js';
import { docsScreenshot, launchChromium, reportBrowser, SLOW_MS } from '../helpers/chromium.js';
import { until } from '../helpers/until.js';
import { startStripeStandIn, type StripeStandIn } from '../fixtures/stripe-standin.js';

const WEBHOOK_SECRET = 'whsec_browser_standin_secret_0123';

const launched = await launchChromium();
reportBrowser(launched, 'billing browser tests');

describe.skipIf(!launched.browser)('buying credits in Chromium', { timeout: SLOW_MS * 5 }, () => {
  const browser = launched.browser!;
  let standIn: StripeStandIn;
  let t: TestApp;
  let user: ConsoleUser;
  const problems: string[] = [];

  beforeAll(async () => {
    // Another site than the gateway's 127.0.0.1, as Checkout is: the way back is cross-site.
    standIn = await startStripeStandIn({ webhookSecret: WEBHOOK_SECRET, host: 'localhost' });
    t = await startTestApp({ ...standIn.gatewayEnv(), CREDIT_PACKS: '100:500,1000:4000' });
    standIn.webhookUrl = `${t.baseUrl}/api/stripe/webhook`;
    user = await createConsoleUser(t, { credits: 10 });
  });

  afterAll(async () => {
    await browser.close();
    await t?.close();
    await standIn?.close();
  });

  async function openPage(width: number, height: number): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height } });
    context.setDefaultTimeout(SLOW_MS);
    context.setDefaultNavigationTimeout(SLOW_MS);
    const page = await context.newPage();
    page.on('pageerror', (err) => problems.push(`page error on ${page.url()}: ${err.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content.Security.Policy|Refused/i.test(m.text())) problems.push(`console on ${page.url()}: ${m.text()}`);
    });
    await page.goto(`${t.baseUrl}/console`);
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Billing', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    return page;
  }

  async function expectAccessible(page: Page, what: string): Promise<void> {
    const { violations } = await new AxeBuilder({ page }).analyze();
    const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(blocking.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), `axe on ${what}`).toEqual([]);
  }

  const shownBalance = async (page: Page) => Number(await page.locator('[data-balance]').textContent());


  it('Buy → the stand-in checkout → Pay → back signed in: Payment received, balance up by exactly the pack', async () => {
    const page = await openPage(1440, 900);
    expect(await shownBalance(page)).toBe(10);
    await expectAccessible(page, 'Billing before a purchase');
    // Sign-up credits (the account's creation, audited with its amount) are in the history already.
    expect(await page.getByRole('table').getByRole('row').count()).toBe(2);
    expect(await page.getByRole('table').textContent()).toContain('Sign-up credits');

    const navigations: string[] = [];
    page.on('response', (r) => {
      if (r.request().isNavigationRequest() && r.url().startsWith(t.baseUrl)) navigations.push(`${r.status()} ${new URL(r.url()).pathname}${new URL(r.url()).search}`);
    });
    await page.getByRole('button', { name: 'Buy 100 credits' }).click();
    await page.waitForURL((u) => u.origin === new URL(standIn.base).origin);
    await page.getByRole('button', { name: 'Pay' }).click();
    await page.waitForURL((u) => u.href.startsWith(`${t.baseUrl}/console/billing?checkout=success`));
    await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
    await page.getByText('Payment received').waitFor();
    // The cross-site return came without the session cookie and was continued same-site.
    // (the first answer is the page that continues; without it the return would be a 303 to sign-in)
    expect(navigations.slice(-2)).toEqual(['200 /console/billing?checkout=success', '200 /console/billing?checkout=success']);

    // The credits show once Stripe's event has granted them: the page's own refresh link.
    await until(async () => {
      // The balance moves with the grant; the row says Paid once the purchase is marked granted, just after.
      if ((await shownBalance(page)) === 110 && /Paid/.test((await page.getByRole('table').textContent()) ?? '')) return true;
      await page.getByRole('link', { name: 'refresh' }).click();
      await page.getByRole('heading', { level: 1, name: 'Billing' }).waitFor();
      return false;
    });
    expect(await shownBalance(page)).toBe(110);
    const row = await page.getByRole('row').filter({ hasText: '$5.00' }).textContent();
    expect(row).toMatch(/100[\s\S]*\$5\.00[\s\S]*Paid/);
    await expectAccessible(page, 'Billing after a purchase');
    expect((await t.services.credits.getAccount(user.accountId))!.credits).toBe(110);
    expect(problems).toEqual([]);

    // Automatic recharge can be turned on now that a card is saved.
    await page.getByLabel('Recharge automatically').check();
    await page.getByLabel('When the balance falls below').fill('20');
    await page.getByLabel('Buy', { exact: true }).selectOption('100');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Automatic recharge saved.').waitFor();
    expect(await page.getByLabel('Recharge automatically').isChecked()).toBe(true);
    await docsScreenshot(page, 'billing-1440');
    await page.context().close();
  });

  it('fits a 375 px screen and passes axe there', async () => {
    const page = await openPage(375, 812);
    const widths = (await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]')) as [number, number];
    expect(widths[0]).toBeLessThanOrEqual(widths[1]);
    await expectAccessible(page, 'Billing at 375 px');
    await docsScreenshot(page, 'billing-375');
    await page.context().close();
    expect(problems).toEqual([]);
  });
});
