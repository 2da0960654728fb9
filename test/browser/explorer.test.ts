/**
 * The console's GraphQL explorer in Chromium: a signed-in user opens Explorer, runs the opening query
 * and sees the balance; every request stays on the gateway's origin (no CDN); axe finds nothing; a
 * subscription typed into the editor runs over graphql-ws as the same account.
 */
import { AxeBuilder } from '@axe-core/playwright';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, reportBrowser, SLOW_MS, watchedPage } from '../helpers/chromium.js';
import { createConsoleUser, type ConsoleUser } from '../helpers/console.js';

const launched = await launchChromium();
const canRun = reportBrowser(launched, 'explorer browser tests');
const SCREENSHOT = process.env.UPDATE_SCREENSHOTS === '1' ? new URL('../../docs/console/explorer-1440.png', import.meta.url) : undefined;

describe.skipIf(!canRun)('console explorer in Chromium', { timeout: SLOW_MS * 4 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let worker: RunningWorker;
  let user: ConsoleUser;
  let context: BrowserContext;
  let page: Page;
  let origins: Set<string>;
  let problems: string[];

  beforeAll(async () => {
    t = await startTestApp();
    worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
    user = await createConsoleUser(t, { credits: 42 });
    context = await browser.newContext({ baseURL: t.baseUrl, viewport: { width: 1440, height: 900 } });
    ({ page, origins, problems } = await watchedPage(context));
    await page.goto('/console/sign-in');
    await page.getByLabel('Email').fill(user.email);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console$/, { timeout: SLOW_MS });
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await worker?.stop(20_000);
    await t?.close();
  });

  it('opens from the nav with me { credits } and shows the balance when run', async () => {
    await page.getByRole('link', { name: 'Explorer' }).click();
    await page.waitForURL(/\/console\/explorer$/, { timeout: SLOW_MS });
    const run = page.getByRole('button', { name: /Execute query/i });
    await run.waitFor({ timeout: SLOW_MS });
    await expect.poll(() => page.locator('.graphiql-query-editor').innerText(), { timeout: SLOW_MS }).toContain('credits');
    // The schema was fetched as the page started (docs and completion need it): the docs list Query.
    await page.getByRole('button', { name: /Show Documentation Explorer/i }).click();
    await expect.poll(() => page.locator('.graphiql-doc-explorer').innerText(), { timeout: SLOW_MS }).toContain('Query');
    expect(await page.locator('.graphiql-response').innerText()).not.toContain('errors');
    await run.click();
    await expect.poll(() => page.locator('.graphiql-response').innerText(), { timeout: SLOW_MS }).toMatch(/"credits":\s*42/);
    if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT.pathname });
    expect([...origins]).toEqual([t.baseUrl]);
    expect(problems).toEqual([]);
  });

  it('shows no third-party footer', async () => {
    expect(await page.locator('body').innerText()).not.toMatch(/sponsor/i);
    expect(await page.locator('.ruru-footer').isVisible()).toBe(false);
  });

  it('at 375 px: no sideways scrolling, an editor as wide as the screen allows, and the query runs', async () => {
    // Signed in as the same user; GraphiQL's saved state (the docs left open above) stays behind.
    const phone = await browser.newContext({ baseURL: t.baseUrl, viewport: { width: 375, height: 812 }, storageState: { cookies: (await context.storageState()).cookies, origins: [] } });
    try {
      const watched = await watchedPage(phone);
      const p = watched.page;
      await p.goto('/console/explorer');
      const run = p.getByRole('button', { name: /Execute query/i });
      await run.waitFor({ timeout: SLOW_MS });
      await expect.poll(() => p.locator('.graphiql-query-editor').innerText(), { timeout: SLOW_MS }).toContain('credits');
      const layout = (await p.evaluate(`(() => {
        const box = (s) => { const r = document.querySelector(s)?.getBoundingClientRect(); return r ? { left: r.left, right: r.right, width: r.width, height: r.height } : null; };
        return { scrollWidth: document.documentElement.scrollWidth, clientWidth: document.documentElement.clientWidth, editor: box('.graphiql-query-editor'), response: box('.graphiql-response') };
      })()`)) as { scrollWidth: number; clientWidth: number; editor: { width: number; height: number } | null; response: { width: number; height: number } | null };
      expect(layout.scrollWidth, `the page is ${layout.scrollWidth} px wide in ${layout.clientWidth} px`).toBeLessThanOrEqual(layout.clientWidth);
      // Query and response one above the other, each nearly the screen's width (190 px side by side before).
      expect(layout.editor!.width, JSON.stringify(layout)).toBeGreaterThanOrEqual(280);
      expect(layout.response!.width, JSON.stringify(layout)).toBeGreaterThanOrEqual(280);
      expect(layout.editor!.height, JSON.stringify(layout)).toBeGreaterThanOrEqual(150);
      expect(await p.locator('body').innerText()).not.toMatch(/sponsor/i);
      await run.click();
      await expect.poll(() => p.locator('.graphiql-response').innerText(), { timeout: SLOW_MS }).toMatch(/"credits":\s*42/);
      if (SCREENSHOT) await p.screenshot({ path: new URL('explorer-375.png', SCREENSHOT).pathname });
      // The docs open above the query, as wide as it, rather than squeezing it.
      await p.getByRole('button', { name: /Show Documentation Explorer/i }).click();
      await expect.poll(() => p.locator('.graphiql-doc-explorer').innerText(), { timeout: SLOW_MS }).toContain('Query');
      const widths = (await p.evaluate(`[document.querySelector('.graphiql-doc-explorer').getBoundingClientRect().width, document.querySelector('.graphiql-query-editor').getBoundingClientRect().width, document.documentElement.scrollWidth]`)) as number[];
      expect(widths[0]).toBeGreaterThanOrEqual(280);
      expect(widths[1]).toBeGreaterThanOrEqual(280);
      expect(widths[2]).toBeLessThanOrEqual(375);
      expect([...watched.origins]).toEqual([t.baseUrl]);
      expect(watched.problems).toEqual([]);
    } finally {
      await phone.close();
    }
  });

  it('axe finds no violations', async () => {
    const results = await new AxeBuilder({ page }).analyze();
    expect(results.violations.map((v) => `${v.id}: ${v.nodes.map((n) => `${n.target.join(" ")} (${n.any[0]?.message ?? n.failureSummary})`).join(", ")}`)).toEqual([]);
  });

  it('runs a subscription over graphql-ws as the signed-in account', async () => {
    const created = await t.services.jobs.create({ accountId: user.accountId, keyId: user.keyId }, ['a kite over the sea']);
    const editor = page.locator('.graphiql-query-editor .monaco-editor').first();
    await editor.click();
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.press('Delete');
    await page.keyboard.insertText(`subscription Watch { jobStatus(jobId: "${created.jobId}") { status succeededImages } }`);
    // GraphiQL picks the transport from the document it has parsed (debounced): the tab takes the
    // operation's name once it has, and only then does Run send a subscription over graphql-ws.
    await page.getByRole('tab', { name: 'Watch' }).waitFor({ timeout: SLOW_MS });
    await page.getByRole('button', { name: /Execute query/i }).click();
    await expect.poll(() => page.locator('.graphiql-response').innerText(), { timeout: SLOW_MS }).toMatch(/"status":\s*"completed"|"errors"/);
    expect(await page.locator('.graphiql-response').innerText()).toMatch(/"status":\s*"completed"/);
    expect([...origins]).toEqual([t.baseUrl]);
    expect(problems).toEqual([]);
  });
});
