/**
 * The API keys page's lifecycle dialogs in Chromium (playwright-core, no browser downloaded): create
 * with every setting, edit, roll with the new key shown once; axe on each. UPDATE_SCREENSHOTS=1 also
 * writes docs/console/keys-1440.png (the table with its Expires and Credits left columns).
 */
import { mkdir } from 'node:fs/promises';
import { AxeBuilder } from '@axe-core/playwright';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, reportBrowser, SLOW_MS } from '../helpers/chromium.js';

const UPDATE_SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1';
const EMAIL = 'kay@example.com';
const PASSWORD = 'correct horse battery staple';

const launched = await launchChromium();
reportBrowser(launched, 'console keys browser tests');

describe.skipIf(!launched.browser)('API key lifecycle in Chromium', { timeout: SLOW_MS * 5 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let accountId: string;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  async function expectAccessible(what: string): Promise<void> {
    const { violations } = await new AxeBuilder({ page }).analyze();
    const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(blocking.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), `axe on ${what}`).toEqual([]);
  }

  const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });

  /** Text of each cell of a row, by its column header. */
  async function cells(name: string): Promise<Record<string, string>> {
    const headers = await page.getByRole('columnheader').allTextContents();
    const texts = await row(name).getByRole('cell').or(row(name).getByRole('rowheader')).allTextContents();
    return Object.fromEntries(headers.map((h, i) => [h.trim(), (texts[i] ?? '').trim()]));
  }

  beforeAll(async () => {
    t = await startTestApp();
    const account = await t.services.credits.createAccount('Keys Ltd', 50, { actor: 'test', ip: null, host: 'test' });
    accountId = account.id;
    await t.services.console.users.create(accountId, EMAIL, PASSWORD, { actor: 'test', ip: '127.0.0.1', host: 'test-host' });
    context = await browser.newContext({ viewport: { width: 1440, height: 900 }, baseURL: t.baseUrl });
    context.setDefaultTimeout(SLOW_MS);
    page = await context.newPage();
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto('/console');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  }, SLOW_MS * 2);

  afterAll(async () => {
    await context?.close();
    await browser.close();
    await t?.close();
  }, SLOW_MS * 2);

  it('Add Key with every setting: shown once with Copy; the table shows Expires and Credits left', async () => {
    await page.goto('/console/keys');
    await page.getByRole('button', { name: 'Add Key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add Key' });
    await dialog.waitFor();
    for (const label of ['Definitions', 'Images', 'Read', 'Client tokens', 'Webhooks']) expect(await dialog.getByLabel(label, { exact: true }).isChecked()).toBe(true);
    expect(await dialog.getByLabel('Expires').inputValue()).toBe('never');
    await expectAccessible('the Add Key dialog with its settings');

    await dialog.getByLabel('Name').fill('ci runner');
    await dialog.getByLabel('Expires').selectOption({ label: '30 days' });
    await dialog.getByLabel('Credit limit').fill('5');
    await dialog.getByLabel('Refill').selectOption({ label: 'Daily' });
    await dialog.getByLabel('Rate limit per minute').fill('30');
    await dialog.getByLabel('Webhooks', { exact: true }).uncheck();
    await dialog.getByLabel('Client tokens', { exact: true }).uncheck();
    await dialog.getByRole('button', { name: 'Create Key' }).click();
    await dialog.getByRole('button', { name: 'Copy' }).waitFor();
    const key = ((await dialog.getByText(/^wi_live_[0-9a-f]{64}$/).textContent()) ?? '').trim();
    expect(key).toMatch(/^wi_live_[0-9a-f]{64}$/);
    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.waitForLoadState('load');
    await row('ci runner').waitFor();
    for (const name of ['Name', 'Key', 'Expires', 'Credits left', 'Last used', 'Created']) await page.getByRole('columnheader', { name, exact: true }).waitFor();

    const [stored] = (await t.services.keys.list(accountId)).filter((k) => k.name === 'ci runner');
    expect(stored).toMatchObject({ creditLimit: 5, creditsLeft: 5, refill: 'daily', rateLimitPerMinute: 30, permissions: ['lookup', 'generate', 'read'] });
    expect(Math.abs(stored!.expiresAt!.getTime() - Date.now() - 30 * 86_400_000)).toBeLessThan(600_000);
    const shown = await cells('ci runner');
    expect(shown.Expires).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    expect(shown['Credits left']).toBe('5 of 5 (daily)');
    await expectAccessible('API keys with a capped key');
    // Shown once: the page never shows the key again.
    expect(await page.content()).not.toContain(key);
  });

  it('Edit opens the same fields filled in; a bad value says why; Save changes the row', async () => {
    await row('ci runner').getByRole('button', { name: 'Edit', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Edit “ci runner”' });
    await dialog.waitFor();
    expect(await dialog.getByLabel('Credit limit').inputValue()).toBe('5');
    expect(await dialog.getByLabel('Refill').inputValue()).toBe('daily');
    expect(await dialog.getByLabel('Webhooks', { exact: true }).isChecked()).toBe(false);
    await expectAccessible('the Edit dialog');

    await dialog.getByLabel('Credit limit').fill('');
    await dialog.getByRole('button', { name: 'Save' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'refill needs a credit limit' }).waitFor();

    await dialog.getByLabel('Credit limit').fill('8');
    await dialog.getByLabel('Webhooks', { exact: true }).check();
    await dialog.getByRole('button', { name: 'Save' }).click();
    await page.waitForLoadState('load');
    await page.getByRole('cell', { name: '8 of 8 (daily)' }).waitFor();
    const [stored] = (await t.services.keys.list(accountId)).filter((k) => k.name === 'ci runner');
    expect(stored).toMatchObject({ creditLimit: 8, permissions: ['lookup', 'generate', 'read', 'webhooks'] });
  });

  it('Roll key: the new key shown once with Copy; the old one works for the grace chosen', async () => {
    const before = (await t.services.keys.list(accountId)).find((k) => k.name === 'ci runner')!;
    await row('ci runner').getByRole('button', { name: 'Roll key', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Roll “ci runner”' });
    await dialog.waitFor();
    const grace = dialog.getByLabel('Keep the old key working for');
    expect(await grace.locator('option').allTextContents()).toEqual(['Revoke now', '1 hour', '24 hours', '7 days']);
    await expectAccessible('the Roll key dialog');
    await grace.selectOption({ label: '24 hours' });
    await dialog.getByRole('button', { name: 'Roll key' }).click();
    await dialog.getByRole('button', { name: 'Copy' }).waitFor();
    const key = ((await dialog.getByText(/^wi_live_[0-9a-f]{64}$/).textContent()) ?? '').trim();
    expect(key).toMatch(/^wi_live_[0-9a-f]{64}$/);
    expect(key.slice(0, 12)).not.toBe(before.prefix);
    await expectAccessible('the Roll key dialog with the new key');
    await dialog.getByRole('button', { name: 'Done' }).click();
    await page.waitForLoadState('load');
    await expect.poll(async () => (await page.getByRole('rowheader', { name: 'ci runner', exact: true }).count())).toBe(2);

    const keys = (await t.services.keys.list(accountId)).filter((k) => k.name === 'ci runner');
    const rolled = keys.find((k) => k.rolledFrom === before.id)!;
    expect(rolled).toMatchObject({ prefix: key.slice(0, 12), creditLimit: 8, refill: 'daily', rateLimitPerMinute: 30, expiresAt: before.expiresAt });
    const old = keys.find((k) => k.id === before.id)!;
    expect(Math.abs(old.expiresAt!.getTime() - Date.now() - 86_400_000)).toBeLessThan(600_000);
    expect(await page.content()).not.toContain(key);

    if (UPDATE_SCREENSHOTS) {
      await mkdir(new URL('../../docs/console/', import.meta.url), { recursive: true });
      await page.screenshot({ path: new URL('../../docs/console/keys-1440.png', import.meta.url).pathname, animations: 'disabled', caret: 'hide' });
    }
    expect(problems).toEqual([]);
  });
});
