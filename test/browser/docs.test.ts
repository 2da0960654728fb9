/**
 * The API reference (`/docs`) in Chromium: Swagger UI renders every REST operation from
 * `/openapi.json` under the page's strict CSP (no violation reported), no request leaves the
 * gateway's origin, and axe finds no serious or critical violation.
 */
import { AxeBuilder } from '@axe-core/playwright';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { launchChromium, reportBrowser, SLOW_MS, watchedPage } from '../helpers/chromium.js';

const launched = await launchChromium();
const canRun = reportBrowser(launched, 'API reference browser tests');

describe.skipIf(!canRun)('/docs in Chromium', { timeout: SLOW_MS * 3 }, () => {
  const browser = launched.browser!;
  let t: TestApp;
  let context: BrowserContext;
  let page: Page;
  let origins: Set<string>;
  let problems: string[];

  beforeAll(async () => {
    t = await startTestApp();
    context = await browser.newContext({ baseURL: t.baseUrl, viewport: { width: 1280, height: 900 } });
    ({ page, origins, problems } = await watchedPage(context));
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
  });

  it('renders every operation of the document, from this origin only, with no CSP violation', async () => {
    await page.goto('/docs');
    const doc = (await (await fetch(`${t.baseUrl}/openapi.json`)).json()) as { paths: Record<string, object> };
    for (const path of Object.keys(doc.paths)) {
      await page.locator('.opblock-summary-path', { hasText: new RegExp(`^${path.replace(/[{}]/g, '\\$&')}$`) }).first().waitFor({ timeout: SLOW_MS });
    }
    expect([...origins]).toEqual([t.baseUrl]);
    expect(problems).toEqual([]);
  });

  it('axe finds no serious or critical violation', async () => {
    const { violations } = await new AxeBuilder({ page }).analyze();
    const blocking = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(blocking.map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([]);
  });
});
