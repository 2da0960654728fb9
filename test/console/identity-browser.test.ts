/**
 * Sign-up, Settings, two-factor sign-in and password reset in a real browser (Debian's Chromium via
 * playwright-core), with every email read from a real SMTP server on loopback and codes computed by
 * otplib as an authenticator app would. axe runs on every new page. UPDATE_SCREENSHOTS=1 also writes
 * docs/console/signup-*.png and settings-*.png.
 *
 * The tests run in order and share one page: each continues where the last one left off.
 */
import { AxeBuilder } from '@axe-core/playwright';
import { generate } from 'otplib';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { docsScreenshot, expectFitsWidth, launchChromium, reportBrowser, SLOW_MS } from '../helpers/chromium.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';


const EMAIL = 'nora@example.com';
const FIRST_PASSWORD = 'first password of nora';
const SECOND_PASSWORD = 'second password of nora';
const THIRD_PASSWORD = 'third password of nora';

const launched = await launchChromium();
reportBrowser(launched, 'accounts browser tests');

describe.skipIf(!launched.browser)('sign-up, settings and two-factor sign-in in Chromium', { timeout: SLOW_MS * 5 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let smtp: TestSmtpServer;
  let context: BrowserContext;
  let page: Page;
  const pageProblems: string[] = [];
  let secret = '';
  let recoveryCodes: string[] = [];

  async function newPage(width: number, height: number): Promise<{ context: BrowserContext; page: Page }> {
    const ctx = await browser.newContext({ viewport: { width, height }, baseURL: t.baseUrl });
    ctx.setDefaultTimeout(SLOW_MS);
    ctx.setDefaultNavigationTimeout(SLOW_MS);
    const p = await ctx.newPage();
    p.on('pageerror', (err) => pageProblems.push(`page error on ${p.url()}: ${err.message}`));
    p.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) pageProblems.push(`CSP on ${p.url()}: ${m.text()}`);
    });
    return { context: ctx, page: p };
  }

  async function expectAccessible(p: Page, what: string): Promise<void> {
    const { violations } = await new AxeBuilder({ page: p }).analyze();
    const report = violations.map((v) => `  ${v.impact} ${v.id}: ${v.help}\n${v.nodes.map((n) => `    ${n.target.join(' ')}`).join('\n')}`).join('\n');
    expect(violations, `axe on ${what}:\n${report}`).toEqual([]);
  }



  /** The same page at 375 px: it fits, and (UPDATE_SCREENSHOTS=1) its screenshot. */
  async function atPhoneWidth(path: string, name: string, cookiesFrom?: BrowserContext): Promise<void> {
    const small = await newPage(375, 812);
    if (cookiesFrom) await small.context.addCookies(await cookiesFrom.cookies());
    await small.page.goto(path);
    await small.page.waitForLoadState('load');
    await expectFitsWidth(small.page, `${path} at 375 px`);
    await docsScreenshot(small.page, name);
    await small.context.close();
  }

  async function signInWithPassword(password: string): Promise<void> {
    await page.goto('/console/sign-in');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  async function signOut(): Promise<void> {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in$/);
  }

  const code = (offsetSteps: number) => generate({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSteps * 30 });

  beforeAll(async () => {
    smtp = await startSmtpServer();
    t = await startTestApp({ SMTP_URL: smtp.url, SIGNUP_CREDITS: '50' });
    ({ context, page } = await newPage(1440, 900));
  }, SLOW_MS * 2);

  afterEach(() => {
    expect(pageProblems.splice(0), 'uncaught page errors or Content-Security-Policy refusals').toEqual([]);
  });

  afterAll(async () => {
    await context?.close();
    await browser.close();
    await t?.close();
    await smtp?.close();
  }, SLOW_MS * 2);

  it('sign-up: Create an account → Check your email → the emailed link opens the Overview', async () => {
    await page.goto('/console/sign-in');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Create an account' }).waitFor();
    await expectAccessible(page, 'the sign-up page');
    await docsScreenshot(page, 'signup-1440');
    await atPhoneWidth('/console/sign-up', 'signup-375');

    await page.getByLabel('Account name').fill('Nora’s Frontend Team');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill('short');
    // The browser's own check (minlength) stops a too-short password before it is sent.
    expect(await page.getByLabel('Password').evaluate((el) => (el as HTMLInputElement).validity.tooShort || (el as HTMLInputElement).value.length < 12)).toBe(true);
    await page.getByLabel('Password').fill(FIRST_PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Check your email' }).waitFor();
    await expectAccessible(page, 'Check your email');

    const mail = await smtp.nextMessage(EMAIL);
    // Nothing the requester typed: the account name is no part of the email.
    expect(mail.html).not.toContain('Nora’s Frontend Team');
    await page.goto(mail.links[0]!);
    await page.waitForURL(`${t.baseUrl}/console`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    // SIGNUP_CREDITS.
    expect(await page.locator('[data-balance]').textContent()).toBe('50');

    // The link works once.
    await page.goto(mail.links[0]!);
    await page.getByText('This link has expired or was already used').waitFor();
    await expectAccessible(page, 'a used link');
    await page.goto('/console');
  });

  it('sign-up: the link opened in a second browser asks for the sign-up password first; a wrong one creates nothing', async () => {
    const sender = await newPage(1440, 900);
    const other = await newPage(1440, 900);
    try {
      await sender.page.goto('/console/sign-up');
      await sender.page.getByLabel('Account name').fill('Olga Labs');
      await sender.page.getByLabel('Email').fill('olga@example.com');
      await sender.page.getByLabel('Password').fill('the password olga chose');
      await sender.page.getByRole('button', { name: 'Create account' }).click();
      await sender.page.getByRole('heading', { level: 1, name: 'Check your email' }).waitFor();
      const link = (await smtp.nextMessage('olga@example.com')).links[0]!;

      await other.page.goto(link);
      await other.page.getByRole('heading', { level: 1, name: 'Finish sign-up' }).waitFor();
      await expectAccessible(other.page, 'Finish sign-up');
      await other.page.getByLabel('Password').fill('somebody else guessing');
      await other.page.getByRole('button', { name: 'Finish sign-up' }).click();
      await other.page.getByRole('alert').filter({ hasText: 'Incorrect password' }).waitFor();
      expect(await t.connection.db!.collection('accounts').countDocuments({ name: 'Olga Labs' })).toBe(0);
      expect((await other.context.cookies()).some((c) => c.name === 'console_session')).toBe(false);

      await other.page.getByLabel('Password').fill('the password olga chose');
      await other.page.getByRole('button', { name: 'Finish sign-up' }).click();
      await other.page.waitForURL(`${t.baseUrl}/console`);
      await other.page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      expect(await other.page.locator('[data-balance]').textContent()).toBe('50');

      // Used: the browser that sent the form is told so, and signed in nowhere by it.
      await sender.page.goto(link);
      await sender.page.getByText('This link has expired or was already used').waitFor();
      expect(await t.connection.db!.collection('accounts').countDocuments({ name: 'Olga Labs' })).toBe(1);
    } finally {
      await sender.context.close();
      await other.context.close();
    }
  });

  it('settings: a wrong current password is refused; the right one changes it', async () => {
    await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Settings', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Settings' }).waitFor();
    await expectAccessible(page, 'Settings');
    await docsScreenshot(page, 'settings-1440');
    await atPhoneWidth('/console/settings', 'settings-375', context);

    const password = page.getByRole('region', { name: 'Password' });
    await password.getByLabel('Current password').fill('not my password at all');
    await password.getByLabel('New password').fill(SECOND_PASSWORD);
    await password.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('alert').filter({ hasText: 'Current password is incorrect' }).waitFor();
    await expectAccessible(page, 'Settings with an error');

    await page.getByRole('region', { name: 'Password' }).getByLabel('Current password').fill(FIRST_PASSWORD);
    await page.getByRole('region', { name: 'Password' }).getByLabel('New password').fill(SECOND_PASSWORD);
    await page.getByRole('region', { name: 'Password' }).getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('status').filter({ hasText: 'Your password is changed' }).waitFor();
  });

  it('two-factor: set up with the QR code and the secret, enable with a code, see 10 recovery codes', async () => {
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const qr = page.getByRole('img', { name: 'QR code for your authenticator app' });
    await qr.waitFor();
    expect(await qr.evaluate((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0)).toBe(true);
    await expectAccessible(page, 'two-factor set-up');
    secret = (await page.locator('code.secret').textContent())!.replace(/\s/g, '');
    await page.getByLabel('Code').fill(await code(0));
    await page.getByRole('button', { name: 'Enable' }).click();
    const list = page.getByRole('list', { name: 'Recovery codes' });
    await list.waitFor();
    recoveryCodes = (await list.getByRole('listitem').allTextContents()).map((c) => c.trim());
    expect(recoveryCodes).toHaveLength(10);
    await expectAccessible(page, 'recovery codes');
  });

  it('sign-in then asks for an Authentication code; a computed code signs in', async () => {
    await page.goto('/console');
    await signOut();
    await signInWithPassword(SECOND_PASSWORD);
    await page.getByLabel('Authentication code').waitFor();
    await expectAccessible(page, 'the authentication code step');
    // The pending step is not a session.
    await page.goto('/console/keys');
    await page.waitForURL(/\/console\/sign-in/);
    await page.goto('/console/sign-in/verify');
    await page.getByLabel('Authentication code').fill(await code(1));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.waitForURL(`${t.baseUrl}/console`);
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });

  it('a recovery code signs in once in place of a code', async () => {
    await signOut();
    await signInWithPassword(SECOND_PASSWORD);
    await page.getByLabel('Authentication code').fill(recoveryCodes[0]!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await signOut();
    await signInWithPassword(SECOND_PASSWORD);
    await page.getByLabel('Authentication code').fill(recoveryCodes[0]!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('alert').filter({ hasText: 'Invalid authentication code' }).waitFor();
    await expectAccessible(page, 'the code step with its error');
  });

  it('password reset: Forgot password? → the emailed link → New password → sign in with it', async () => {
    await page.goto('/console/sign-in');
    await page.getByRole('link', { name: 'Forgot password?' }).click();
    await page.getByRole('heading', { level: 1, name: 'Forgot your password?' }).waitFor();
    await expectAccessible(page, 'forgot password');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByRole('button', { name: 'Send reset link' }).click();
    await page.getByRole('status').filter({ hasText: 'If an account exists for that email, we sent a link' }).waitFor();

    const mail = await smtp.nextMessage(EMAIL);
    expect(mail.subject).toBe('Reset your password');
    await page.goto(mail.links[0]!);
    await page.getByLabel('New password').fill(THIRD_PASSWORD);
    await expectAccessible(page, 'reset password');
    await page.getByRole('button', { name: 'Set password' }).click();
    await page.getByRole('status').filter({ hasText: 'Your new password is set' }).waitFor();

    await signInWithPassword(THIRD_PASSWORD);
    await page.getByLabel('Authentication code').fill(recoveryCodes[1]!);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  });
});
