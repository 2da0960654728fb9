/**
 * The console in a real browser: Debian's Chromium, driven by playwright-core, against a real gateway
 * (startTestApp) with an image worker in this process. The tests find everything by the accessible
 * names the contract promises (CONTRACT.md, "Console"), run axe on every page, and check that pages fit
 * a 375 px screen.
 *
 * No browser is ever downloaded (test/helpers/chromium.ts: CHROMIUM_PATH, REQUIRE_BROWSER_TESTS).
 * UPDATE_SCREENSHOTS=1 also writes the README's screenshots to docs/console/.
 *
 * The tests run in order and share one signed-in page: each continues where the last one left off.
 */
import { AxeBuilder } from '@axe-core/playwright';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';
import { docsScreenshot, launchChromium, reportBrowser, SLOW_MS } from '../helpers/chromium.js';


const EMAIL = 'ada@example.com';
const PASSWORD = 'correct horse battery staple';
const KEY_NAME = 'production server';
const IP = /^(127\.0\.0\.1|::ffff:127\.0\.0\.1)$/;
const TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/;

// Launched while the file is collected, so that a browser that cannot start skips the file as cleanly
// as a missing one.
const launched = await launchChromium();
reportBrowser(launched, 'console browser tests');

describe.skipIf(!launched.browser)('console in Chromium', { timeout: SLOW_MS * 5 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let worker: RunningWorker;
  let account: TestAccount;
  let context: BrowserContext;
  let page: Page;
  /** Uncaught page errors and Content-Security-Policy refusals, checked after every test. */
  const pageProblems: string[] = [];
  /** The key created in the browser: full text, shown once. */
  let createdKey = '';

  const url = (path: string) => `${t.baseUrl}${path}`;
  const silent = { info() {}, warn() {}, error() {} };

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

  async function signIn(p: Page, password = PASSWORD): Promise<void> {
    await p.getByLabel('Email').fill(EMAIL);
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  async function goTo(p: Page, link: string, heading = link): Promise<void> {
    await p.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: link, exact: true }).click();
    await p.getByRole('heading', { level: 1, name: heading, exact: true }).waitFor();
    await p.waitForLoadState('load');
  }

  /** axe on the page as it is now: no violation of impact `serious` or `critical`. */
  async function expectAccessible(p: Page, what: string): Promise<void> {
    const { violations } = await new AxeBuilder({ page: p }).analyze();
    const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    const report = blocking
      .map((v) => `  ${v.impact} ${v.id}: ${v.help} (${v.helpUrl})\n${v.nodes.map((n) => `    ${n.target.join(' ')}: ${n.failureSummary?.replace(/\s+/g, ' ')}`).join('\n')}`)
      .join('\n');
    expect(blocking, `axe on ${what}:\n${report}`).toEqual([]);
  }

  /**
   * The page reflows (WCAG 1.4.10): no sideways scrolling of the page (wide tables may scroll inside
   * their own box), and no table caption squeezed narrower than its table (one word per line).
   */
  async function expectFitsWidth(p: Page, what: string): Promise<void> {
    const layout = (await p.evaluate(`({
      scrollWidth: document.documentElement.scrollWidth,
      clientWidth: document.documentElement.clientWidth,
      captions: [...document.querySelectorAll('caption')].map((c) => ({
        text: c.textContent, width: c.getBoundingClientRect().width, tableWidth: c.parentElement.getBoundingClientRect().width,
      })),
    })`)) as { scrollWidth: number; clientWidth: number; captions: { text: string; width: number; tableWidth: number }[] };
    expect(layout.scrollWidth, `${what} is ${layout.scrollWidth} px wide in a ${layout.clientWidth} px window`).toBeLessThanOrEqual(layout.clientWidth);
    for (const c of layout.captions) {
      expect(c.width, `${what}: caption "${c.text}" is ${c.width} px wide in a ${c.tableWidth} px table`).toBeGreaterThanOrEqual(c.tableWidth * 0.9);
    }
  }

  /** Captions of the tables whose box scrolls sideways (wider than it shows). */
  async function tablesScrollingSideways(p: Page): Promise<string[]> {
    return (await p.evaluate(`[...document.querySelectorAll('.table-wrap')]
      .filter((w) => w.scrollWidth > w.clientWidth)
      .map((w) => (w.querySelector('caption')?.textContent ?? '(no caption)') + ': ' + w.scrollWidth + ' px in ' + w.clientWidth + ' px')`)) as string[];
  }

  /** Writes docs/console/<name>.png only when UPDATE_SCREENSHOTS=1; here the window's size unless asked for the whole page. */
  const screenshot = (p: Page, name: string, opts: { fullPage?: boolean } = {}) => docsScreenshot(p, name, { fullPage: opts.fullPage ?? false });

  /** The number in "Balance: N credits" on the playground. */
  async function balance(p: Page): Promise<number> {
    const text = await p.getByText(/Balance: \d+ credits/).textContent();
    return Number(/Balance: (\d+) credits/.exec(text ?? '')?.[1]);
  }

  async function lookUp(keyword: string): Promise<Response> {
    return fetch(url('/api/playground/query'), {
      method: 'POST',
      headers: { authorization: `Bearer ${createdKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ keyword }),
    });
  }

  /** Text of each cell of `row`, by its column header, so the test reads the column the contract names. */
  async function cellsByHeader(p: Page, row: ReturnType<Page['getByRole']>): Promise<Record<string, string>> {
    const headers = await p.getByRole('columnheader').allTextContents();
    const cells = await row.getByRole('cell').or(row.getByRole('rowheader')).allTextContents();
    return Object.fromEntries(headers.map((h, i) => [h.trim(), (cells[i] ?? '').trim()]));
  }

  beforeAll(async () => {
    t = await startTestApp();
    // startTestApp serves the APIs only; images need a worker, started as src/main.ts does.
    worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, silent);
    account = await t.createAccountWithKey({ credits: 100, name: 'Acme Analytics' });
    await t.services.console.users.create(account.accountId, EMAIL, PASSWORD, { actor: 'test', ip: '127.0.0.1', host: 'test-host' });
    ({ context, page } = await newPage(1440, 900));
  }, SLOW_MS * 2);

  afterEach(() => {
    const problems = pageProblems.splice(0);
    expect(problems, 'uncaught page errors or Content-Security-Policy refusals').toEqual([]);
  });

  afterAll(async () => {
    await context?.close();
    await browser.close();
    await worker?.stop(20_000);
    await t?.close();
  }, SLOW_MS * 2);

  it('sign in: a wrong password says "Invalid email or password"; the right one opens the Overview', async () => {
    await page.goto('/console');
    await page.waitForURL(/\/console\/sign-in$/);
    await page.getByRole('heading', { name: 'Sign in to the console' }).waitFor();
    await expectAccessible(page, 'the sign-in page');
    await screenshot(page, 'signin-1440');

    await signIn(page, 'not the password');
    await page.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor();
    expect(await page.getByLabel('Email').inputValue()).toBe(EMAIL);
    await expectAccessible(page, 'the sign-in page with its error');

    await signIn(page);
    await page.waitForURL(url('/console'));
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await expectAccessible(page, 'Overview');
  });

  it('API keys: Add Key shows the new key once with Copy; it works over REST; the table lists it, then its last use', async () => {
    await goTo(page, 'API keys');
    for (const name of ['Name', 'Key', 'Last used', 'Created']) await page.getByRole('columnheader', { name, exact: true }).waitFor();

    await page.getByRole('button', { name: 'Add Key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add Key' });
    await dialog.waitFor();
    await expectAccessible(page, 'API keys with the Add Key dialog open');

    await dialog.getByLabel('Name').fill(KEY_NAME);
    await dialog.getByRole('button', { name: 'Create Key' }).click();
    const copy = dialog.getByRole('button', { name: 'Copy' });
    await copy.waitFor();
    createdKey = ((await dialog.getByText(/^wi_live_/).textContent()) ?? '').trim();
    expect(createdKey).toMatch(/^wi_live_[A-Za-z0-9_-]{20,}$/);
    await expectAccessible(page, 'API keys with the new key shown');
    await screenshot(page, 'keys-created-1440');

    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.baseUrl });
    await copy.click();
    await dialog.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(createdKey);

    const res = await lookUp('serendipity');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ keyword: 'serendipity', definition: expect.any(String) });

    // Done reloads the list; the key is shown only by its 12-character prefix from now on.
    await dialog.getByRole('button', { name: 'Done' }).click();
    const prefix = createdKey.slice(0, 12);
    const row = page.getByRole('row', { name: new RegExp(`${KEY_NAME}.*${prefix}…`) });
    await row.waitFor();
    expect(await page.getByText(createdKey).count(), 'the full key is never shown again').toBe(0);
    expect(await cellsByHeader(page, row)).toMatchObject({ Name: KEY_NAME, Key: `${prefix}…`, Created: expect.stringMatching(TIME) });

    // Last used is written in the background, coalesced: flush it, then the page shows the time.
    const deadline = Date.now() + SLOW_MS;
    let lastUsed = '';
    while (Date.now() < deadline) {
      await t.services.lastUsed.flush();
      await page.reload();
      lastUsed = (await cellsByHeader(page, row))['Last used'] ?? '';
      if (lastUsed !== 'Never') break;
    }
    expect(lastUsed).toMatch(TIME);
  });

  it('Delete asks for confirmation, removes the row, and the next request with the key gets 401', async () => {
    const row = page.getByRole('row', { name: new RegExp(KEY_NAME) });
    await row.getByRole('button', { name: 'Delete' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete key' });
    await dialog.getByText(`Delete “${KEY_NAME}”?`).waitFor();
    await expectAccessible(page, 'API keys with the delete confirmation open');

    await dialog.getByRole('button', { name: 'Delete key' }).click();
    await row.waitFor({ state: 'detached' });
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    // The key made by the harness is still there: only the one chosen went.
    await page.getByRole('row', { name: /test key/ }).waitFor();

    const res = await lookUp('serendipity');
    expect(res.status).toBe(401);
  });

  it('Audit log: key created and key deleted, each with the IP address, and the sign-in', async () => {
    await goTo(page, 'Audit log');
    for (const name of ['Time', 'Event', 'Actor', 'IP address', 'Details']) await page.getByRole('columnheader', { name, exact: true }).waitFor();

    const entry = async (event: string, details?: string) => {
      const row = page.getByRole('row').filter({ has: page.getByRole('cell', { name: event, exact: true }) });
      const matching = details ? row.filter({ hasText: details }) : row;
      return cellsByHeader(page, matching.first());
    };
    for (const event of ['Key created', 'Key deleted']) {
      const cells = await entry(event, `“${KEY_NAME}”`);
      expect(cells, event).toMatchObject({ Event: event, Actor: `console:${EMAIL}`, 'IP address': expect.stringMatching(IP), Time: expect.stringMatching(TIME) });
    }
    expect(await entry('Signed in')).toMatchObject({ 'IP address': expect.stringMatching(IP) });
    expect(await entry('Sign-in failed')).toMatchObject({ 'IP address': expect.stringMatching(IP) });
    await expectAccessible(page, 'Audit log');
    await screenshot(page, 'audit-1440');
  });

  it('Playground: Look up shows the definition; Generate shows each image with its prompt as alt; the balance follows', async () => {
    await goTo(page, 'Playground');
    const before = await balance(page);

    await page.getByLabel('Keyword').fill('lighthouse');
    await page.getByRole('button', { name: 'Look up' }).click();
    await page.getByRole('heading', { name: 'lighthouse', exact: true }).waitFor();
    await page.getByText(/tower with a light/i).waitFor();
    await expect.poll(() => balance(page), { timeout: SLOW_MS }).toBe(before - 1);

    const prompts = ['a lighthouse at dawn', 'a red bicycle in the rain'];
    await page.getByLabel('Prompts').fill(prompts.join('\n'));
    await page.getByRole('button', { name: 'Generate' }).click();
    for (const prompt of prompts) {
      const img = page.getByRole('img', { name: prompt, exact: true });
      await img.waitFor({ timeout: SLOW_MS * 2 });
      // Loaded, not only in the page: a refused or broken image has no natural width.
      await expect.poll(() => img.evaluate((el) => (el as unknown as { complete: boolean; naturalWidth: number }).naturalWidth), { timeout: SLOW_MS }).toBeGreaterThan(0);
    }
    await page.getByText('2 of 2 images done').waitFor();
    await expect.poll(() => balance(page), { timeout: SLOW_MS }).toBe(before - 3);
    await expectAccessible(page, 'Playground with images');
    await screenshot(page, 'playground-1440');
  });

  it('Overview, Usage, Jobs and Sessions show this account and pass axe', async () => {
    await goTo(page, 'Overview');
    await page.getByRole('heading', { name: 'Credit balance' }).waitFor();
    await page.getByText('credits spent: 2 on definitions, 2 on images').waitFor();
    await expectAccessible(page, 'Overview with usage');
    await screenshot(page, 'overview-1440');

    await goTo(page, 'Usage');
    await page.getByRole('cell', { name: 'Console playground' }).first().waitFor();
    await page.getByRole('cell', { name: new RegExp(`${KEY_NAME} \\(wi_live_.{4}…\\) \\(deleted\\)`) }).waitFor();
    await expectAccessible(page, 'Usage');

    await goTo(page, 'Jobs');
    await page.getByRole('img', { name: 'a red bicycle in the rain', exact: true }).waitFor();
    await expectAccessible(page, 'Jobs');

    await goTo(page, 'Sessions');
    await page.getByText('This session').waitFor();
    await expectAccessible(page, 'Sessions');
  });

  it('at 375 px every page reflows: no sideways scrolling, no squeezed table caption', async () => {
    const phone = await newPage(375, 812);
    try {
      const p = phone.page;
      await p.goto('/console');
      await p.waitForURL(/\/console\/sign-in$/);
      await expectFitsWidth(p, 'the sign-in page');
      await screenshot(p, 'signin-375');
      await signIn(p);
      await p.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await expectFitsWidth(p, 'Overview');
      await screenshot(p, 'overview-375');

      await goTo(p, 'API keys');
      await p.getByRole('button', { name: 'Add Key' }).click();
      const dialog = p.getByRole('dialog', { name: 'Add Key' });
      await dialog.getByLabel('Name').fill('staging server');
      await dialog.getByRole('button', { name: 'Create Key' }).click();
      await dialog.getByRole('button', { name: 'Copy' }).waitFor();
      await expectFitsWidth(p, 'API keys with the new key shown');
      await screenshot(p, 'keys-375');
      await dialog.getByRole('button', { name: 'Done' }).click();
      await p.getByRole('row', { name: /staging server/ }).waitFor();
      await expectFitsWidth(p, 'API keys');

      await goTo(p, 'Playground');
      await p.getByLabel('Prompts').fill('a paper boat on a pond');
      await p.getByRole('button', { name: 'Generate' }).click();
      await p.getByRole('img', { name: 'a paper boat on a pond', exact: true }).waitFor({ timeout: SLOW_MS * 2 });
      await p.getByText('1 of 1 images done').waitFor();
      await expectFitsWidth(p, 'Playground');
      await screenshot(p, 'playground-375', { fullPage: true });

      for (const name of ['Usage', 'Audit log', 'Jobs', 'Sessions']) {
        await goTo(p, name);
        await expectFitsWidth(p, name);
        // Usage has rows by now (the image above); each row of a table reads as a card, nothing to scroll.
        if (name === 'Usage') await p.getByRole('cell', { name: 'Images' }).first().waitFor();
        expect(await tablesScrollingSideways(p), `${name}: tables scrolling sideways`).toEqual([]);
        if (name === 'Audit log') await screenshot(p, 'audit-375');
      }
    } finally {
      await phone.context.close();
    }
  });

  it('Sign out returns to the sign-in page, and /console asks to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in$/);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();

    await page.goto('/console/keys');
    await page.waitForURL(/\/console\/sign-in\?next=%2Fconsole%2Fkeys$/);
    await page.goto('/console');
    await page.waitForURL(/\/console\/sign-in$/);
    await page.getByLabel('Password').waitFor();
  });
});
